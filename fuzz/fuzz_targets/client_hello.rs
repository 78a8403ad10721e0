//! The first bytes of a `CONNECT` tunnel, read as a TLS ClientHello for its SNI.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = hookbox_net::fuzzing::client_hello_sni(bytes);
});
