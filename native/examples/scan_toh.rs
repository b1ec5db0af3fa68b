//! Scan a toh session log with the native scanner and print the time:
//! `cargo run --release --no-default-features --example scan_toh -- FILE` (for profiling).
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a toh session log");
    let data = std::fs::read(&path).expect("readable file");
    for _ in 0..3 {
        let t = Instant::now();
        let got = _core::toh::scan_file(&data);
        println!(
            "{} events ({}), {:.3} s",
            got.as_ref().map_or(0, |o| o.len()),
            if got.is_some() { "read" } else { "refused" },
            t.elapsed().as_secs_f64()
        );
    }
}
