//! argv -> Config2 for iperf 2's latency options: `--histograms` and its
//! bins, `--jitter-histograms`, `--isochronous` and `--ipg`, and the
//! `--bounceback` family.

use rperf3_app::iperf2::config::Role2;

use super::tests::{cfg, client, run};
use super::Action;

/// `--jitter-histograms[=us]` is a server's (bins of 100 µs unless given);
/// a client says so in 2.2.1's words and runs without it.
#[test]
fn jitter_histograms_on_the_server_only() {
    assert_eq!(
        cfg("-s -u --jitter-histograms").common.jitter_histograms,
        Some(100)
    );
    assert_eq!(
        cfg("-s -u --jitter-histograms=50").common.jitter_histograms,
        Some(50)
    );
    assert_eq!(cfg("-s -u").common.jitter_histograms, None);
    let p = run("-c h -u --jitter-histograms");
    assert_eq!(
        p.stderr,
        ["WARN: option of --jitter-histogram not supported on the client"]
    );
    match p.action {
        Action::Run(c) => assert_eq!(c.common.jitter_histograms, None),
        _ => panic!("runs"),
    }
}

/// `--isochronous[=fps:mean,stdev]` as 2.2.1 reads it: defaults 60 frames of
/// 20 Mbit/s without deviation, iperf 2's suffixes, `--ipg` in milliseconds,
/// `-e` turned on; UDP only here (TCP frames warn and run plainly).
#[test]
fn isochronous_reads_frames_rates_and_gap() {
    let c = client("-c h -u --isochronous");
    let d = rperf3_app::iperf2::config::IsochSpec::default();
    assert_eq!(c.isoch, Some(d));
    let c = client("-c h -u --isochronous=30:5m,1.5m --ipg 0.25");
    let i = c.isoch.unwrap();
    assert_eq!(
        (i.fps, i.mean_bps, i.stdev_bps, i.ipg_ms),
        (30.0, 5e6, 1.5e6, 0.25)
    );
    let p = run("-c h -u --isochronous=24");
    match p.action {
        Action::Run(cfg) => assert!(cfg.common.enhanced),
        a => panic!("{a:?}"),
    }
    // TCP frames too (issue 18), with no warning.
    let p = run("-c h --isochronous=30:5m");
    assert!(p.stderr.is_empty(), "{:?}", p.stderr);
    assert_eq!(client("-c h --isochronous=30:5m").isoch.unwrap().fps, 30.0);
}

/// `--histograms=width,bins` as 2.2.1's client reads the sane forms: `u` or
/// no suffix µs, `m` ms; what is missing or not a whole positive number
/// keeps its default.
#[test]
fn histograms_take_bin_width_and_count_issue18() {
    let bins = |a: &str| match run(&format!("-c h {a}")).action {
        Action::Run(cfg) => (cfg.common.histograms, cfg.common.hist_bins),
        a => panic!("{a:?}"),
    };
    let b = |bin_ns, bins| rperf3_app::iperf2::config::HistBins2 { bin_ns, bins };
    assert_eq!(bins("--histograms"), (true, b(100_000, 100_000)));
    assert_eq!(bins("--histograms=1m,50"), (true, b(1_000_000, 50)));
    assert_eq!(bins("--histograms=250u,10"), (true, b(250_000, 10)));
    assert_eq!(bins("--histograms=2"), (true, b(2_000, 100_000)));
    assert_eq!(bins("--histograms=,30"), (true, b(100_000, 30)));
    assert_eq!(bins("--histograms=0.5m,x"), (true, b(100_000, 100_000)));
    assert_eq!(bins("-e"), (false, b(100_000, 100_000)));
}

/// 2.2.1 still takes `--udp-histograms` (and its abbreviation
/// `--udp-histogram`) as `--histograms`.
#[test]
fn udp_histograms_is_histograms() {
    for a in ["--udp-histograms", "--udp-histogram", "--histograms"] {
        let p = run(&format!("-s -u {a}"));
        assert!(p.stderr.is_empty(), "{a}: {:?}", p.stderr);
        match p.action {
            Action::Run(cfg) => assert!(cfg.common.histograms, "{a}"),
            a => panic!("{a:?}"),
        }
    }
}

/// `--bounceback[=N]` and its options as 2.2.1 reads them: hold in
/// milliseconds, period in seconds, sizes in bytes (the reply the request's
/// by default); a bounceback client prints the enhanced layout, Nagle off.
#[test]
fn bounceback_options() {
    let bb = |args: &str| match cfg(args).role {
        Role2::Client(c) => c.bounceback,
        Role2::Server(_) => None,
    };
    let b = bb("-c h --bounceback").expect("bounceback");
    assert_eq!(
        (b.count, b.period, b.request, b.reply, b.hold_us, b.quickack),
        (10, 1.0, 100, 100, 0, true)
    );
    let b = bb(
        "-c h --bounceback=5 --bounceback-hold 2 --bounceback-period 0.5 \
                --bounceback-request 200 --bounceback-reply 300 --bounceback-no-quickack",
    )
    .expect("bounceback");
    assert_eq!(
        (b.count, b.period, b.request, b.reply, b.hold_us, b.quickack),
        (5, 0.5, 200, 300, 2000, false)
    );
    assert_eq!(
        bb("-c h --bounceback-period 0 --bounceback")
            .unwrap()
            .period,
        0.0
    );
    assert_eq!(bb("-c h"), None);
    // --bounceback-txdelay: seconds before the first request (none by default).
    assert_eq!(
        bb("-c h --bounceback --bounceback-txdelay 1.5")
            .unwrap()
            .txdelay,
        1.5
    );
    assert_eq!(bb("-c h --bounceback").unwrap().txdelay, 0.0);
    let c = cfg("-c h --bounceback");
    assert!(c.common.enhanced && c.common.nodelay);
}
