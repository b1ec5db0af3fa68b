//! Any bytes into the toh file scanner, as they are and after a session header line: it must
//! never panic, and a file it accepts must have consistent columns (one value per event in
//! each), canonical payloads that are JSON objects, line numbers rising, and a header span
//! inside the file.
#![no_main]
use _core::json::Scanner;
use _core::toh::scan_file;
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8]) {
    let Some(out) = scan_file(data) else { return };
    let n = out.len();
    assert_eq!(out.seq.len(), n);
    assert_eq!(out.payload.len(), n);
    assert_eq!(out.text.len(), n);
    assert_eq!(out.typ.len(), n);
    assert_eq!(out.call_id.len(), n);
    assert_eq!(out.turn.values.len(), n);
    assert_eq!(out.time.values.len(), n);
    assert_eq!(out.is_error.values.len, n);
    assert!(out.line.windows(2).all(|w| w[0] <= w[1]));
    assert!(out.header.0 <= out.header.1 && out.header.1 <= data.len());
    assert!(out.py_hash_rows.iter().all(|&r| (r as usize) < n));
    if let _core::cols::Offsets::I64(offs) = &out.payload.offsets {
        for w in offs.windows(2) {
            let p = &out.payload.data[w[0] as usize..w[1] as usize];
            let mut sc = Scanner::new(p);
            assert!(
                sc.skip_object(1).is_ok() && sc.pos == p.len(),
                "payload is not one object"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut with_header = b"{\"type\":\"session\",\"id\":\"s\"}\n".to_vec();
    with_header.extend_from_slice(data);
    check(&with_header);
});
