//! Golden tests of the one-way delays of the test's own data (`--latency` on a
//! UDP test between rperf3 ends): the `[LAT]` lines, the end table rows, the clock
//! warning and `data_one_way` in `-J`, beside the probes' `one_way`.

use rperf3_latency::{Figures, Summary};
use serde_json::Value;

use crate::cjson;
use crate::golden_latency::{client_run, keys, summary, with_server};
use crate::latency::interval_lines;

fn data_down() -> Summary {
    summary(8000, [150.5, 151.25, 151.0, 152.0, 153.5, 154.0])
}

const WARNING: &str = "warning: 3 one-way delays of the data server to client were negative \
                       (down to -999.500 ms): the client's clock is behind the server's, \
                       data one-way figures are wrong";

#[test]
fn data_one_way_interval_lines_name_the_data_and_count_datagrams_issue18() {
    let f = Figures {
        data_up: summary(900, [8.5, 9.125, 9.0, 9.5, 9.875, 10.0]),
        data_down: data_down(),
        ..Figures::default()
    };
    let lines = interval_lines("[LAT]   1.00-2.00   sec", &f, "");
    assert_eq!(
        lines,
        [
            "[LAT]   1.00-2.00   sec  rtt: no round trips\n",
            "[LAT]   1.00-2.00   sec  data one-way up min/mean/p99/max \
             8.500/9.125/9.875/10.000 ms, 900 datagrams\n",
            "[LAT]   1.00-2.00   sec  data one-way down min/mean/p99/max \
             150.500/151.250/153.500/154.000 ms, 8000 datagrams\n",
        ]
    );
}

#[test]
fn data_one_way_end_rows_and_the_warning_that_says_which_way_issue18() {
    let mut lat = with_server(true).unwrap();
    lat.figures.data_down = data_down();
    lat.figures.data_clock_warning = Some(WARNING.into());
    let text = client_run(|_| {}, false, Some(lat)).text_or_doc;
    let want = "  one-way up          500     1.000     2.000     4.000     6.000     7.250\n  \
                data down          8000   150.500   151.000   152.000   153.500   154.000\n\
                Responsiveness: 398 RPM, Medium\n";
    assert!(text.contains(want), "{text}");
    assert!(
        text.ends_with(&format!("{WARNING}\n\niperf Done.\n")),
        "{text}"
    );
    // Without data delays there is no data row.
    let plain = client_run(|_| {}, false, with_server(true)).text_or_doc;
    assert!(!plain.contains("data "), "{plain}");
}

const DATA_JSON: &str = r#"{"up":{"count":0,"min_ms":0,"mean_ms":0,"p50_ms":0,"p99_ms":0,"max_ms":0},"down":{"count":8000,"min_ms":150.5,"mean_ms":151.25,"p50_ms":151,"p99_ms":153.5,"max_ms":154},"clock_warning":"warning: 3 one-way delays of the data server to client were negative (down to -999.500 ms): the client's clock is behind the server's, data one-way figures are wrong"}"#;

#[test]
fn data_one_way_json_follows_one_way_and_precedes_with_server_issue18() {
    let mut lat = with_server(true).unwrap();
    lat.figures.data_down = data_down();
    lat.figures.data_clock_warning = Some(WARNING.into());
    let doc: Value =
        serde_json::from_str(&client_run(|o| o.json = true, false, Some(lat)).text_or_doc).unwrap();
    let l = &doc["end"]["latency"];
    assert_eq!(
        keys(l),
        [
            "idle",
            "loaded",
            "rpm",
            "one_way",
            "data_one_way",
            "with_server"
        ]
    );
    assert_eq!(cjson::to_compact(&l["data_one_way"]), DATA_JSON);
    let plain = client_run(|o| o.json = true, false, with_server(true)).text_or_doc;
    assert!(!plain.contains("data_one_way"), "{plain}");
}

#[test]
fn a_data_note_says_why_the_data_delays_are_missing_in_text_and_json_issue18() {
    let note =
        "not available, the server does not time the data (an rperf3 older than this client)";
    let mut lat = with_server(true).unwrap();
    lat.data_note = Some(note.into());
    let text = client_run(|_| {}, false, Some(lat.clone())).text_or_doc;
    assert!(
        text.contains(&format!(
            "Responsiveness: 398 RPM, Medium\nData one-way delays: {note}\n"
        )),
        "{text}"
    );
    let doc: Value =
        serde_json::from_str(&client_run(|o| o.json = true, false, Some(lat)).text_or_doc).unwrap();
    let l = &doc["end"]["latency"];
    assert_eq!(l["data_one_way_unavailable"], note);
    let k = keys(l);
    assert_eq!(
        &k[k.len() - 2..],
        ["data_one_way_unavailable", "with_server"]
    );
}
