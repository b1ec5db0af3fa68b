//! Any bytes into the tracing-platform JSON Lines scanners (`platform.rs`; Phoenix spans
//! today, the place for Langfuse / LangSmith when they are added), as they are and after a
//! clean span line: it must never panic, and a file it accepts must have consistent columns
//! (one value per row in each), canonical payloads that are JSON objects, line numbers inside
//! the file, each run's rows together with `seq` 0, 1, 2 ... and one run header per run.
#![no_main]
use _core::json::Scanner;
use _core::platform::scan_phoenix;
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8]) {
    let Some(out) = scan_phoenix(data) else {
        return;
    };
    let n = out.len();
    for c in [
        &out.run_id,
        &out.source,
        &out.typ,
        &out.kind,
        &out.ts,
        &out.event_id,
        &out.ref_id,
        &out.tool_name,
        &out.args_hash,
        &out.finish,
        &out.text,
        &out.payload,
    ] {
        assert_eq!(c.len(), n);
    }
    assert_eq!(out.line.len(), n);
    for c in [&out.turn, &out.step, &out.input_tokens, &out.output_tokens] {
        assert_eq!(c.values.len(), n);
    }
    assert_eq!(out.is_error.values.len, n);
    let lines = data.iter().filter(|&&b| b == b'\n').count() as i64 + 1;
    assert!(out.line.iter().all(|&l| l >= 1 && l <= lines));
    // runs: contiguous, seq counting from 0 in each, one header each
    let starts = out.seq.iter().filter(|&&s| s == 0).count();
    assert_eq!(starts, out.runs.len());
    assert!(out.seq.windows(2).all(|w| w[1] == 0 || w[1] == w[0] + 1));
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
        b"{\"context\":{\"trace_id\":\"t\",\"span_id\":\"r\"},\"span_kind\":\"CHAIN\"}\n".to_vec();
    after.extend_from_slice(data);
    check(&after);
});
