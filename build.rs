//! Link-time settings of the `cronstable` binary.
//!
//! Packed relative relocations (`-z pack-relative-relocs`, DT_RELR): the
//! position-independent binary carries about 60,000 relative relocations,
//! which as classic RELA entries are 1.4 MB that the dynamic loader reads
//! at every start, and which then stay resident (about 1.2 MB of the idle
//! daemon's RSS, measured). Packed, they take about 24 KB. The binary stays
//! position-independent (ASLR unchanged); it needs glibc 2.36 or newer at
//! run time, which the images we build on and for have. Set
//! `CRONSTABLE_PACKED_RELOCS=0` when building for an older glibc.
//!
//! Only for dynamically linked glibc builds: a static (`crt-static`)
//! build relocates itself, and the musl toolchain has its own rules.

fn main() {
    println!("cargo:rerun-if-env-changed=CRONSTABLE_PACKED_RELOCS");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_build = features.split(',').any(|f| f == "crt-static");
    let opted_out = std::env::var("CRONSTABLE_PACKED_RELOCS").is_ok_and(|v| v == "0");
    if os == "linux" && env == "gnu" && !static_build && !opted_out {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
