//! The server's Prometheus histograms of the data's one-way delays and of
//! `--bounceback` round trips, scraped after a test and compared with what the
//! client's JSON says the server received (its datagram count) or the client
//! timed (its transactions).

use crate::common;

use common::prom;

#[test]
fn the_servers_metrics_hold_every_datagram_it_timed_and_every_round_trip_issue18() {
    let (srv, mport) = prom::server(&[]);
    let out = srv.client(&["-u", "-b", "2M", "-l", "1000", "-t", "1", "--latency", "-J"]);
    out.assert_ok();
    let doc = out.json();
    let rx = &doc["end"]["sum_received"];
    let datagrams = rx["packets"].as_u64().unwrap() - rx["lost_packets"].as_u64().unwrap();
    let m = prom::scrape_until(mport, "the first test counted", |m| {
        prom::outcome(m, "ok") == 1.0
    });
    let count = "rperf3_data_one_way_seconds_count{direction=\"up\"}";
    assert_eq!(prom::get(&m, count), datagrams as f64);
    let up = &doc["end"]["latency"]["data_one_way"]["up"];
    let mean_s = up["mean_ms"].as_f64().unwrap() / 1e3;
    let sum = prom::get(&m, "rperf3_data_one_way_seconds_sum{direction=\"up\"}");
    assert!(
        (sum - mean_s * datagrams as f64).abs() < 1e-6,
        "sum {sum} vs mean {mean_s} s"
    );
    assert_eq!(prom::get(&m, "rperf3_bounceback_seconds_count"), 0.0);

    let out = srv.client(&["-t", "1", "--bounceback", "-J"]);
    out.assert_ok();
    let bb = &out.json()["end"]["bounceback"];
    let n = bb["count"].as_u64().unwrap();
    assert!(n > 100, "{bb}");
    let m = prom::scrape_until(mport, "the second test counted", |m| {
        prom::outcome(m, "ok") == 2.0
    });
    assert_eq!(prom::get(&m, "rperf3_bounceback_seconds_count"), n as f64);
    let sum = prom::get(&m, "rperf3_bounceback_seconds_sum");
    let mean_s = bb["mean_ms"].as_f64().unwrap() / 1e3;
    assert!(
        (sum - mean_s * n as f64).abs() < 1e-6 * n as f64,
        "sum {sum} vs mean {mean_s} s over {n}"
    );
    // The data of a bounceback test is not timed one way: unchanged.
    assert_eq!(prom::get(&m, count), datagrams as f64);
}
