# hookbox's Python zygote (see hookbox_exec::PythonZygotes): an interpreter initialised once
# that forks per run. Descriptor 0 is the control socket (SEQPACKET, shared with hookbox only);
# each message carries five descriptors: the request (a memory file: script, working directory,
# arguments, environment), the run's stdin, stdout and stderr, and its reply socket.
#
# Per run the zygote forks a keeper (its own session, a child subreaper, every signal blocked)
# that forks the run: stdio set, every other descriptor closed, environment, working directory
# and argv as asked, then the script run as __main__ (runpy). The keeper sends STARTED (with a
# pidfd of itself) and, once the run has exited and every process it started is killed and
# reaped, EXITED with its wait status; when the reply socket hangs up (hookbox stopped
# waiting: a timeout, or it is gone) it kills everything at once. The zygote exits when the
# control socket ends.
import ctypes, gc, io, os, runpy, select, signal, socket, struct, sys
# What runpy.run_path imports on each use, and the module hooks read their event with.
import json, pkgutil  # noqa: F401

RECORD_FAILED, RECORD_READY, RECORD_STARTED, RECORD_EXITED = 2, 4, 5, 6
STEP_REQUEST, STEP_CHDIR = 1, 2
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
WALL = 0x40000000
BUFFERED = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom)
LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    if LIBC.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl")


def send(reply, kind, a=0, b=0, fd=None):
    record = struct.pack("=III", kind, a & 0xFFFFFFFF, b & 0xFFFFFFFF)
    try:
        if fd is None:
            reply.send(record)
        else:
            socket.send_fds(reply, [record], [fd])
    except OSError:
        pass


def decode(data):
    at = 0

    def count():
        nonlocal at
        (n,) = struct.unpack_from("<I", data, at)
        at += 4
        return n

    def string():
        nonlocal at
        n = count()
        if at + n > len(data):
            raise ValueError("truncated request")
        at += n
        return data[at - n:at]

    program, cwd = string(), string()
    args = [string() for _ in range(count())]
    env = [string() for _ in range(count())]
    if at != len(data):
        raise ValueError("trailing bytes in the request")
    return program, cwd, args, env


def read_all(fd):
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 16, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def children():
    try:
        with open("/proc/thread-self/children") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:
        return []


def kill_descendants():
    # Each killed child's children are reparented to this subreaper: repeat until none is left.
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, WALL)
        except ChildProcessError:
            return
        except OSError:
            pass


def run(script, args, env, stdio):
    # The run itself: never returns (it exits the way `python3 SCRIPT` would).
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    os.closerange(3, 1 << 20)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    os.environ.clear()
    for entry in env:
        name, _, value = entry.partition(b"=")
        if name and b"\0" not in entry:
            os.environb[name] = value
    # What the interpreter added to its own environment at start-up (PEP 538's LC_CTYPE), as
    # a cold start adds it; and PWD as `sh -c` sets it.
    for name, value in STARTUP_ENVIRONMENT.items():
        os.environb.setdefault(name, value)
    try:
        if not os.path.samefile(os.environb.get(b"PWD", b""), b"."):
            raise OSError
    except OSError:
        os.environb[b"PWD"] = os.getcwdb()
    script = os.fsdecode(script)
    sys.argv = [script] + [os.fsdecode(arg) for arg in args]
    try:
        with open(script, "rb"):
            pass
    except OSError as error:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (
            sys.executable, os.path.abspath(script), error.errno, error.strerror))
        sys.stderr.flush()
        os._exit(2)
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as error:
        finish(exit_code(error))
    except BaseException as error:
        # The traceback from the script's own frames on, as `python3 SCRIPT` prints it (none
        # for a script that does not compile).
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        sys.excepthook(type(error), error.with_traceback(tb), tb)
        finish(1)
    finish(0)


def exit_code(error):
    # The exit status `python3 SCRIPT` gives a SystemExit that ends it.
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code & 0xFF
    try:
        sys.stderr.write("%s\n" % (error.code,))
    except Exception:
        pass
    return 1


def finish(code):
    # What the interpreter's own exit does that a script can see (non-daemon threads joined,
    # atexit handlers run, stdio flushed: status 120 when stdout cannot be), without tearing
    # the interpreter down, which would take most of a warm run's time.
    threading = sys.modules.get("threading")
    if threading is not None and hasattr(threading, "_shutdown"):
        threading._shutdown()
    import atexit
    atexit._run_exitfuncs()
    # Files the script left open and still referenced are flushed, as the teardown would.
    opened = [stream for stream in gc.get_objects() if type(stream) in BUFFERED]
    opened.sort(key=lambda stream: type(stream) is not io.TextIOWrapper)
    for stream in opened:
        try:
            if not stream.closed and stream not in (sys.stdout, sys.stderr):
                stream.flush()
        except Exception:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            if stream is sys.stdout and code == 0:
                code = 120
    os._exit(code)


def keeper(control, request, stdin, stdout, stderr, reply_fd):
    # Never returns.
    control.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    reply = socket.socket(fileno=reply_fd)
    try:
        os.setsid()
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        _program, cwd, args, env = decode(read_all(request))
        os.close(request)
        script, args = args[0], args[1:]
    except (OSError, ValueError, IndexError, struct.error) as error:
        send(reply, RECORD_FAILED, STEP_REQUEST, getattr(error, "errno", None) or 22)
        os._exit(0)
    try:
        os.chdir(cwd)
    except OSError as error:
        send(reply, RECORD_FAILED, STEP_CHDIR, error.errno or 22)
        os._exit(0)
    me = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != me:
                os._exit(1)
        except OSError:
            os._exit(1)
        run(script, args, env, (stdin, stdout, stderr))
    for fd in (stdin, stdout, stderr):
        os.close(fd)
    send(reply, RECORD_STARTED, me, 0, os.pidfd_open(me))
    exited = os.pidfd_open(child)
    status = None
    poller = select.poll()
    poller.register(reply_fd, select.POLLIN)
    poller.register(exited, select.POLLIN)
    while status is None:
        ready = [fd for fd, _ in poller.poll()]
        if exited in ready:
            status = os.waitpid(child, 0)[1]
        elif reply_fd in ready:
            break
    kill_descendants()
    if status is not None:
        send(reply, RECORD_EXITED, status)
    os._exit(0)


STARTUP_ENVIRONMENT = dict(os.environb)


def main():
    control = socket.socket(fileno=0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control.send(struct.pack("=III", RECORD_READY, 0, 0))
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(control, 16, 5)
        except OSError:
            return
        if not message:
            return
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            keeper(control, *fds)
        for fd in fds:
            os.close(fd)


main()
