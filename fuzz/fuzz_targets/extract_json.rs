#![no_main]

#[allow(dead_code)]
mod bodies {
    include!("../bodies.rs");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::extract_json_body(data));
