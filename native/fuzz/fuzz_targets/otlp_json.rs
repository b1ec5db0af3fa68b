//! Any bytes into the OTLP/JSON decoder, as one document and as JSON lines, and wrapped as
//! an attribute value of a span: it must never panic, document ranges must lie inside the
//! input in line order, and every text it returns must be one valid JSON array of two arrays
//! (the records), nested no deeper than the scanner allows.
#![no_main]
use _core::json::Scanner;
use _core::otlp::scan;
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8]) {
    for lines in [false, true] {
        let docs = scan(data, lines);
        let mut last = 0i64;
        for d in &docs {
            assert!(d.start <= d.end && d.end <= data.len());
            assert!(d.line > last);
            last = d.line;
            if let Some(t) = &d.text {
                assert!(std::str::from_utf8(t).is_ok(), "records are not UTF-8");
                let mut sc = Scanner::new(t);
                assert!(
                    sc.skip_array(1).is_ok() && sc.pos == t.len(),
                    "records are not one JSON array"
                );
                assert!(t.starts_with(b"[[") && t.ends_with(b"]]"));
            }
        }
        if !lines {
            assert_eq!(docs.len(), 1);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut wrapped = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","attributes":[{"key":"k","value":"#.to_vec();
    wrapped.extend_from_slice(data);
    wrapped.extend_from_slice(b"}]}]}]}]}");
    check(&wrapped);
});
