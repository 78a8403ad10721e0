"""Drives `hookbox serve` with the official google-genai SDK's Environments API.

Usage: environments.py BASE_URL   (exits non-zero with a message on the first failed check)
"""

import os
import sys
import warnings

from google import genai


def main(base_url: str) -> None:
    warnings.filterwarnings("ignore", message="Environments usage is experimental")
    # A real key, from `hookbox api-keys create NAME`.
    client = genai.Client(api_key=os.environ["HOOKBOX_API_KEY"], http_options={"base_url": base_url})
    envs = client.environments

    created = envs.create(
        sources=[
            {"type": "inline", "target": "workspace/hello.txt", "content": "aGVsbG8=", "encoding": "base64"},
            {"type": "inline", "target": ".agents/hooks.json", "content": "{}"},
        ],
        network="disabled",
    )
    assert created.id.startswith("env_"), created
    assert created.status == "active", created
    print("created", created.id)

    got = envs.get(created.id)
    assert got.id == created.id, got
    assert got.network == "disabled", got.network

    second = envs.create(from_environment=created.id)
    page = envs.list(page_size=1)
    assert len(page.environments) == 1, page
    assert page.next_page_token, page
    rest = envs.list(page_size=1, page_token=page.next_page_token)
    ids = {page.environments[0].id, rest.environments[0].id}
    assert ids == {created.id, second.id}, ids
    assert not rest.next_page_token, rest

    files = envs.files
    payload = bytes(range(256)) * 40_000  # 10 MB: more than one 8 MiB chunk
    uploaded = files.upload(environment=created.id, path="workspace/data/blob.bin", file=payload)
    assert [f.path for f in uploaded.files] == ["workspace/data/blob.bin"], uploaded
    assert uploaded.files[0].size_bytes == len(payload), uploaded
    small = files.upload(environment=created.id, path="/workspace/notes.md", file=b"# notes\n")
    assert small.files[0].mime_type == "text/markdown", small

    listing = files.list(created.id, "workspace", recursive=True)
    paths = [f.path for f in listing.files]
    assert paths == [
        "workspace/data",
        "workspace/data/blob.bin",
        "workspace/hello.txt",
        "workspace/notes.md",
    ], paths
    kinds = {f.path: f.type for f in listing.files}
    assert kinds["workspace/data"] == "directory", kinds
    flat = files.list(created.id, "workspace")
    assert [f.name for f in flat.files] == ["data", "hello.txt", "notes.md"], flat
    root = files.list(created.id, "")
    assert {f.name for f in root.files} >= {".agents", "workspace"}, root

    assert files.download(environment=created.id, path="workspace/hello.txt") == b"hello"
    assert files.download(environment=created.id, path="workspace/data/blob.bin") == payload

    try:
        envs.get("env_aaaaaaaaaaaaaaaaaaaaaaaaaa")
    except Exception as err:  # google.genai._interactions.NotFoundError
        assert getattr(err, "status_code", None) == 404, repr(err)
    else:
        raise AssertionError("get of an unknown environment succeeded")

    try:
        envs.create(sources=[{"type": "inline", "target": "workspace/x", "content": "!", "encoding": "base64"}])
    except Exception as err:  # google.genai._interactions.BadRequestError
        assert getattr(err, "status_code", None) == 400, repr(err)
        assert "$.sources[0]" in str(err), err
    else:
        raise AssertionError("a bad source was accepted")

    envs.delete(second.id)
    remaining = [e.id for e in envs.list().environments]
    assert remaining == [created.id], remaining
    envs.delete(created.id)
    assert envs.list().environments in (None, []), "environments left after delete"
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
