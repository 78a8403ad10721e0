//! A request head as the egress proxy receives it (`METHOD target` then `name: value` lines),
//! built into the request hyper would hand over, then checked and reduced to its canonical
//! target.
#![no_main]

use hyper::Request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|head: &[u8]| {
    let mut lines = head.split(|byte| *byte == b'\n');
    let Some(first) = lines.next() else { return };
    let mut words = first.splitn(2, |byte| *byte == b' ');
    let (Some(method), Some(uri)) = (words.next(), words.next()) else {
        return;
    };
    let mut builder = Request::builder().method(method).uri(uri);
    for line in lines {
        let Some(colon) = line.iter().position(|byte| *byte == b':') else {
            return;
        };
        let value = line[colon + 1..].trim_ascii();
        builder = builder.header(&line[..colon], value);
    }
    if let Ok(request) = builder.body(()) {
        let _ = hookbox_net::fuzzing::request_target(&request);
    }
});
