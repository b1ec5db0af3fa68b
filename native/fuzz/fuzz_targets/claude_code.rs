//! Any bytes into the JSON-lines transcript scanners, Claude Code's and Codex's (one target
//! for both: the same input runs through each mapping), as they are and after a clean line of
//! each format: they must never panic, and a file one accepts must have consistent columns
//! (one value per row in each), canonical payloads that are JSON objects, line numbers that
//! never fall, run indexes inside the run list and per-run row counts that add up.
#![no_main]
use _core::codex::scan_codex;
use _core::json::Scanner;
use _core::transcripts::{scan_claude_code, CcOut};
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8]) {
    if let Some(out) = scan_claude_code(data, b"agent-fuzz") {
        check_out(&out);
    }
    if let Some(out) = scan_codex(data, b"fuzz") {
        assert!(out.runs.len() <= 1, "a rollout is at most one run");
        assert!(out.seq.iter().enumerate().all(|(i, &s)| s == i as i64));
        check_out(&out);
    }
}

fn check_out(out: &CcOut) {
    let n = out.len();
    assert_eq!(out.seq.len(), n);
    assert_eq!(out.line.len(), n);
    assert_eq!(out.payload.len(), n);
    assert_eq!(out.text.len(), n);
    assert_eq!(out.kind.len(), n);
    assert_eq!(out.typ.len(), n);
    assert_eq!(out.ts.len(), n);
    assert_eq!(out.event_id.len(), n);
    assert_eq!(out.ref_id.len(), n);
    assert_eq!(out.tool_name.len(), n);
    assert_eq!(out.args_hash.len(), n);
    assert_eq!(out.finish.len(), n);
    assert_eq!(out.chunk_type.len(), n);
    assert_eq!(out.turn.values.len(), n);
    assert_eq!(out.step.values.len(), n);
    assert_eq!(out.input_tokens.values.len(), n);
    assert_eq!(out.output_tokens.values.len(), n);
    assert_eq!(out.is_error.values.len, n);
    assert!(out.line.windows(2).all(|w| w[0] <= w[1]));
    assert!(out.run.iter().all(|&r| (r as usize) < out.runs.len()));
    let total: i64 = out.runs.iter().map(|r| r.rows).sum();
    assert_eq!(total as usize, n);
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
    let mut after =
        b"{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"content\":\"hi\"}}\n".to_vec();
    after.extend_from_slice(data);
    check(&after);
    let mut rollout =
        b"{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n".to_vec();
    rollout.extend_from_slice(data);
    check(&rollout);
});
