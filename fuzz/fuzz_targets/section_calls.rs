#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codec_fuzz::check(codec_fuzz::mode("section_calls"), data));
