//! Any bytes as (int64 offsets, data) into the span kernels (SHA-256, the state hash's text
//! hash): an error for offsets out of order or beyond the data, never a panic; accepted
//! offsets give one result per span.
#![no_main]
use _core::hash::{map_spans, sha256_spans, text_hashes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&k, rest)) = input.split_first() else {
        return;
    };
    let cut = (8 * (k as usize % 9)).min(rest.len() / 8 * 8);
    let (offs, data) = rest.split_at(cut);
    let n = (offs.len() / 8).saturating_sub(1);
    if let Ok(lens) = map_spans(offs, data, |b| b.len()) {
        assert_eq!(lens.len(), n);
        assert_eq!(sha256_spans(offs, data).map(|d| d.len()), Ok(32 * n));
        assert_eq!(text_hashes(offs, data).map(|h| h.len()), Ok(n));
    } else {
        assert!(sha256_spans(offs, data).is_err() && text_hashes(offs, data).is_err());
    }
});
