//! Any bytes as the buffers of the chain kernels (`chain::digests`), of the typed payload
//! reader (`pleach::typed_payloads`) and of the verifier's re-derivation
//! (`pleach::derive_payloads`, with type codes from the input): offsets out of order or beyond the data, dictionary
//! indices out of range and short buffers are errors, never a panic; payload spans the
//! scanner is not sure of make it decline.
#![no_main]
use _core::chain::{digests, Content, Piece, Prev, Spans};
use _core::pleach::{derive_payloads, typed_payloads};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let (k, n_rows, rest) = (input[0], input[1] as usize % 8, &input[2..]);
    let cut = (8 * (k as usize % 9)).min(rest.len() / 8 * 8);
    let (offs, data) = rest.split_at(cut);
    let _ = typed_payloads(offs, data);
    let rows = (offs.len() / 8).saturating_sub(1);
    let codes: Vec<u8> = (0..rows).map(|i| input[i % input.len()] % 17).collect();
    if let Ok(Some(d)) = derive_payloads(&codes, offs, data) {
        assert_eq!(d.text.len(), rows);
        assert_eq!(d.args_hash.len(), rows);
        assert_eq!(d.turn.values.len(), rows);
        assert!(d.py_hash_rows.iter().all(|&r| (r as usize) < rows));
    }
    let _ = derive_payloads(&codes[..rows.saturating_sub(1)], offs, data);
    let spans = Spans { offs, data };
    let third = data.len() / 3;
    let (idx, vals) = data.split_at(third);
    let content = Content {
        head: vec![Piece::Lit(b"{")],
        derived: vec![Piece::Dict {
            idx,
            valid: None,
            values: vec![b"\"a\"".to_vec()],
        }],
        sealed: Some(vals),
        tail: vec![
            Piece::Member {
                prefix: b"\"p\":",
                spans,
                valid: None,
            },
            Piece::Str {
                spans,
                valid: Some(vals),
            },
            Piece::Int { vals, valid: None },
            Piece::Bool {
                vals,
                valid: Some(idx),
            },
        ],
    };
    let stored = Prev::Stored { spans, valid: None };
    if let Ok(d) = digests(&content, &stored, n_rows, 2) {
        assert_eq!(d.len(), 64 * n_rows);
    }
    let chained = Prev::Chained {
        starts: vals,
        genesis: b"0",
    };
    if let Ok(d) = digests(&content, &chained, n_rows, 1) {
        assert_eq!(d.len(), 64 * n_rows);
    }
});
