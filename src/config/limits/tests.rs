use super::*;

/// Every case here was read with the original 1.2.72's readers.
#[test]
fn sizes_read_as_the_original_reads_them() {
    let cases: &[(&str, Option<u128>)] = &[
        ("64Mi", Some(67_108_864)),
        ("512M", Some(536_870_912)),
        ("500m", Some(524_288_000)),
        ("1.5GiB", Some(1_610_612_736)),
        ("2Gi", Some(2_147_483_648)),
        ("+4_096", Some(4096)),
        (".5k", Some(512)),
        ("1.", Some(1)),
        ("1.k", Some(1024)),
        ("64 MiB", Some(67_108_864)),
        ("12 mb", Some(12_582_912)),
        ("1kb", Some(1024)),
        ("1b", Some(1)),
        ("1Kib", Some(1024)),
        ("0.3k", Some(307)),
        ("1.9999b", Some(1)),
        ("1.0000000000000000000000000001M", Some(1_048_576)),
        (
            "123456789.123456789123456789123456789012T",
            Some(135_742_175_169_130_346_433),
        ),
        ("0x10", None),
        ("", None),
        ("1__0", None),
        ("1_", None),
        ("_1", None),
        ("1.5e3", None),
        ("-1", None),
        ("1Mx", None),
        ("1 ", Some(1)),
        ("1P", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_size(text), *want, "{text:?}");
    }
    // Far past 8 EiB: read, so the range check names the bound.
    assert!(parse_size("999999999999999999999999999999T").unwrap() > MAX_MEMORY_LIMIT as u128);
}

#[test]
fn cpus_read_as_pythons_float_reads_them() {
    let cases: &[(&str, Option<f64>)] = &[
        ("0.5", Some(0.5)),
        ("1_000", Some(1000.0)),
        ("1e3", Some(1000.0)),
        (".5", Some(0.5)),
        ("5.", Some(5.0)),
        ("+1.5", Some(1.5)),
        ("-1", Some(-1.0)),
        ("1_0.5_5e1_0", Some(105_500_000_000.0)),
        ("1__0", None),
        ("_1", None),
        ("1_", None),
        ("0x1", None),
        ("１", None),
        ("1e", None),
        ("500m", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_cpu(text), *want, "{text:?}");
    }
    assert_eq!(parse_cpu("inf"), Some(f64::INFINITY));
    assert_eq!(parse_cpu("Infinity"), Some(f64::INFINITY));
    assert!(parse_cpu("nan").is_some_and(f64::is_nan));
}

#[test]
fn process_counts_read_as_pythons_int_reads_them() {
    let cases: &[(&str, Option<i128>)] = &[
        ("64", Some(64)),
        ("+64", Some(64)),
        ("-1", Some(-1)),
        ("0", Some(0)),
        ("1_0", Some(10)),
        ("08", Some(8)),
        ("1__0", None),
        ("1.0", None),
        ("", None),
        ("000000000000000000000000000000", Some(0)),
        ("0000000000000000000000000000000", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_processes(text), *want, "{text:?}");
    }
}

#[test]
fn sizes_format_in_binary_units_as_the_original_formats_them() {
    let cases: &[(u64, &str)] = &[
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1280, "1.2 KiB"),
        (1536, "1.5 KiB"),
        (64 << 20, "64 MiB"),
        (1_048_575, "1 MiB"),
        (1_310_720, "1.2 MiB"),
        (1_073_699_880, "1 GiB"),
        (5_497_558_138_880_000, "5000 TiB"),
        (1_000_000_000_000_000_000, "909494.7 TiB"),
    ];
    for (bytes, want) in cases {
        assert_eq!(format_size(*bytes), *want, "{bytes}");
    }
}

fn spec(cpu: Option<&str>, memory: Option<&str>, processes: Option<&str>) -> ResourceLimitsSpec {
    ResourceLimitsSpec {
        cpu: cpu.map(str::to_owned),
        memory: memory.map(str::to_owned),
        processes: processes.map(str::to_owned),
        required: Some(true),
    }
}

#[test]
fn a_block_resolves_to_numbers_and_max_or_nothing_to_no_caps() {
    let caps = resolve(&spec(Some("0.5"), Some("64Mi"), Some(" 32 ")))
        .unwrap()
        .unwrap();
    assert_eq!(
        caps,
        ResourceLimits {
            cpu: Some(0.5),
            memory: Some(64 << 20),
            processes: Some(32),
            required: true,
        }
    );
    assert_eq!(
        caps.payload(),
        serde_json::json!({"cpu": 0.5, "memory_bytes": 67108864, "processes": 32, "required": true})
    );
    // `max` (any case) is the opt-out; with no cap left there are no caps,
    // whatever `required` says.
    assert_eq!(resolve(&spec(Some("MAX"), Some("max"), None)), Ok(None));
    assert_eq!(resolve(&ResourceLimitsSpec::default()), Ok(None));
    let only_memory = resolve(&ResourceLimitsSpec {
        memory: Some("1M".into()),
        ..Default::default()
    })
    .unwrap()
    .unwrap();
    assert!(!only_memory.required);
    assert_eq!(only_memory.cpu, None);
}

#[test]
fn out_of_range_and_unreadable_caps_are_refused_with_the_originals_texts() {
    let cases: &[(ResourceLimitsSpec, &str, &str)] = &[
        (
            spec(Some("0.001"), None, None),
            "resourceLimits.cpu",
            "must be a finite number between 0.01 and 1000000 (CPUs)",
        ),
        (
            spec(Some("nan"), None, None),
            "resourceLimits.cpu",
            "must be a finite number between 0.01 and 1000000 (CPUs)",
        ),
        (
            spec(Some("inf"), None, None),
            "resourceLimits.cpu",
            "must be a finite number between 0.01 and 1000000 (CPUs)",
        ),
        (
            spec(Some("lots"), None, None),
            "resourceLimits.cpu",
            "cannot read 'lots' as a CPU count; use a number between 0.01 and 1000000, such \
             as 0.5 or 2, or max",
        ),
        (
            spec(None, Some("1023K"), None),
            "resourceLimits.memory",
            "must be at least 1 MiB and below 8 EiB",
        ),
        (
            spec(None, Some("8388608T"), None),
            "resourceLimits.memory",
            "must be at least 1 MiB and below 8 EiB",
        ),
        (
            spec(None, Some("1.5e3"), None),
            "resourceLimits.memory",
            "cannot read '1.5e3' as a size; use a byte count or a number with a K, M, G, or T \
             suffix (powers of 1024), at least 1 MiB and below 8 EiB, such as 512M, or max",
        ),
        (
            spec(None, None, Some("0")),
            "resourceLimits.processes",
            "must be between 1 and 4194304",
        ),
        (
            spec(None, None, Some("4194305")),
            "resourceLimits.processes",
            "must be between 1 and 4194304",
        ),
        (
            spec(None, None, Some("it's 5")),
            "resourceLimits.processes",
            "cannot read \"it's 5\" as a process count; use a whole number between 1 and \
             4194304, or max",
        ),
    ];
    for (spec, key, message) in cases {
        let err = resolve(spec).unwrap_err();
        assert_eq!(
            (err.key, err.message.as_str()),
            (*key, *message),
            "{spec:?}"
        );
    }
    // The bounds themselves are accepted.
    let edges = resolve(&spec(Some("0.01"), Some("1Mi"), Some("4194304")))
        .unwrap()
        .unwrap();
    assert_eq!(edges.processes, Some(4_194_304));
    assert!(resolve(&spec(Some("1000000"), Some("9223372036854775807"), None)).is_ok());
}
