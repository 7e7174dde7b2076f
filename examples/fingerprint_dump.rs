//! Prints each job's canonical job-set-id bytes, one line per job:
//! `cargo run --example fingerprint_dump -- CONFIG`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: fingerprint_dump CONFIG");
        std::process::exit(2);
    };
    match cronstable::config::load_path(std::path::Path::new(&path)) {
        Ok(loaded) => {
            let defaults = cronstable::fingerprint::legacy_report_defaults();
            for job in &loaded.jobs {
                println!(
                    "{}",
                    cronstable::fingerprint::job_canonical_bytes(job, &defaults)
                );
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
