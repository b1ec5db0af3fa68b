//! Scan Claude Code transcripts with the native scanner and print the time, next to the strict
//! JSON validation alone and the value trees alone:
//! `cargo run --release --no-default-features --example scan_claude_code -- FILE...`
//! (for profiling).
use std::time::Instant;

fn main() {
    let files: Vec<Vec<u8>> = std::env::args()
        .skip(1)
        .map(|p| std::fs::read(p).expect("readable file"))
        .collect();
    let total: usize = files.iter().map(|f| f.len()).sum();
    for _ in 0..3 {
        let t = Instant::now();
        let mut valid = 0;
        for f in &files {
            for (_, l) in _core::lines::lines(f) {
                let mut s = _core::json::Scanner::new(l);
                valid += usize::from(s.value(0).is_ok());
            }
        }
        let validate = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let trees: usize = files
            .iter()
            .map(|f| _core::lines::objects(f).map_or(0, |v| v.len()))
            .sum();
        let tree = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (mut rows, mut refused) = (0, 0);
        for f in &files {
            match _core::transcripts::scan_claude_code(f, b"file") {
                Some(out) => rows += out.len(),
                None => refused += 1,
            }
        }
        let scan = t.elapsed().as_secs_f64();
        println!(
            "{:.1} MB: validate {validate:.3} s ({valid} lines), trees {tree:.3} s ({trees}), \
             scan {scan:.3} s ({rows} rows, {refused} files refused)",
            total as f64 / 1e6
        );
    }
}
