//! Any bytes into the pleach block scanner: it must never panic, and a block it accepts must
//! have consistent columns (one value per row in each), payload spans that are JSON objects,
//! and line numbers inside the block.
#![no_main]
use _core::json::Scanner;
use _core::pleach::{scan_block, tool_args};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tool_args(data);
    if let Some(out) = scan_block(data) {
        let rows = out.line.len();
        assert!(rows <= out.n_lines);
        assert_eq!(out.tenant_id.len(), rows);
        assert_eq!(out.payload.len(), rows);
        assert_eq!(out.d.text.len(), rows);
        assert_eq!(out.d.args_hash.len(), rows);
        assert!(out.line.windows(2).all(|w| w[0] < w[1]));
        assert!(out.line.iter().all(|&l| (l as usize) < out.n_lines));
        if let _core::cols::Offsets::I64(offs) = &out.payload.offsets {
            for w in offs.windows(2) {
                let p = &out.payload.data[w[0] as usize..w[1] as usize];
                let mut sc = Scanner::new(p);
                assert!(
                    sc.skip_object(1).is_ok() && sc.pos == p.len(),
                    "payload span is not one object"
                );
            }
        }
    }
});
