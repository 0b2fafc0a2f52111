//! RPM over HTTP/2 (`--rpm-http`, `--rpm-url`) on loopback: goresponsiveness
//! measures against our server; our client measures against the reference
//! nginx server and ours; certificates are checked unless `--insecure`; the
//! server's visitors take its test slots (429 when full, `-1`, metrics); and
//! every hostile or broken client ends on its deadline with a line on stderr
//! while the iperf3 port goes on serving. The shaped-link comparisons are in
//! the namespace suite (`netns_rpm_http`).

use std::io::Write;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, free_port, peer_file, prom, require_tool, run_client, Server};

/// How long the server waits for a TLS handshake, a first request, or a
/// stalled stream (the server's `Limits`).
const DEADLINE: Duration = Duration::from_secs(10);
/// What a deadline may overrun by on a busy 2-core host.
const LATE: Duration = Duration::from_secs(2);
/// A visit outlives its last connection by this (the server's `LINGER`).
const LINGER: Duration = Duration::from_secs(3);

/// Our server with `--rpm-http` on a free port: the server, that port.
fn rpm_server(extra: &[&str]) -> (Server, u16) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut args = vec!["--rpm-http", addr.as_str()];
    args.extend_from_slice(extra);
    let srv = Server::start(&args);
    let line = format!("RPM over HTTP/2 on https://{addr}/config (");
    assert!(
        srv.wait_stdout_until(Duration::from_secs(10), |s| s.contains(&line)),
        "no listening line: {}",
        srv.stdout()
    );
    (srv, port)
}

fn config_url(port: u16) -> String {
    format!("https://127.0.0.1:{port}/api/v1/config")
}

/// goresponsiveness, from the peers.
fn goresponsiveness() -> Option<PathBuf> {
    peer_file("GORESPONSIVENESS", "goresponsiveness", "goresponsiveness")
}

/// `curl --http2 -sk ARGS URL`: status code, headers and body.
fn curl(args: &[&str], url: &str) -> (u16, String, String) {
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "20",
            "-D",
            "/dev/stderr",
            "-w",
            "\n%{http_code}",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    let body = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = body.rsplit_once('\n').unwrap_or(("", &body));
    (
        code.trim().parse().unwrap_or(0),
        String::from_utf8_lossy(&out.stderr).to_lowercase(),
        body.to_string(),
    )
}

/// One direction of goresponsiveness's summary: throughput (Mbit/s),
/// connections and its P90 RPM.
fn go_direction(out: &str, name: &str) -> Option<(f64, u32, f64)> {
    let block = out.split(&format!("{name}:")).nth(1)?;
    let mbps = block
        .split("Throughput:")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let conns = block
        .split("using ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let rpm = block
        .split("RPM:")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((mbps, conns, rpm))
}

#[test]
fn goresponsiveness_measures_both_directions_against_our_server() {
    let Some(go) = goresponsiveness() else { return };
    // Its loads are graded (gigabits on loopback): not beside 128 streams.
    let _gate = common::load::timed();
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let (srv, port) = rpm_server(&["--metrics", &maddr]);
    let out = Command::new(go)
        .args(["-url", &config_url(port), "-rpm.timeout", "30"])
        .stdin(Stdio::null())
        .output()
        .expect("goresponsiveness runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for dir in ["Download", "Upload"] {
        let (mbps, conns, rpm) =
            go_direction(&text, dir).unwrap_or_else(|| panic!("{dir}?\n{text}"));
        // Loopback carries gigabits: anything near zero is a failed load.
        assert!(
            mbps > 500.0 && conns >= 1,
            "{dir}: {mbps} Mbit/s on {conns}\n{text}"
        );
        assert!(rpm.is_finite() && rpm > 0.0, "{dir}: RPM {rpm}\n{text}");
    }
    // The visit ran as a test: counted once it is over, with what it moved.
    let m = prom::scrape_until(mport, "the visit counted", |m| {
        prom::outcome(m, "ok") >= 1.0
    });
    assert_eq!(prom::outcome(&m, "refused"), 0.0);
    assert!(
        prom::get(&m, "rperf3_bytes_sent_total{protocol=\"tcp\"}") > 1e8,
        "{m:#?}"
    );
    assert!(
        prom::get(&m, "rperf3_bytes_received_total{protocol=\"tcp\"}") > 1e8,
        "{m:#?}"
    );
    let o = srv.stop();
    for l in o.stderr.lines() {
        // goresponsiveness may open a connection it never uses; nothing else
        // is worth a line.
        assert!(
            l.ends_with("no request within 10 s; closed"),
            "{l:?} in\n{}",
            o.stderr
        );
    }
}

/// `rperf3 --rpm-url URL --insecure` for `stages`, `secs` each: its `-J` document.
fn measure(url: &str, stages: &str, secs: &str) -> Value {
    let args = [
        "--rpm-url",
        url,
        "--insecure",
        "--rpm-stages",
        stages,
        "--rpm-time",
        secs,
        "-J",
    ];
    let out = run_client(&args, Duration::from_secs(60));
    out.assert_ok();
    out.json()
}

/// Our client's `-J` document: each stage's figures, and the start's URL.
fn check_client_doc(doc: &Value, url: &str, stages: &[&str]) {
    assert_eq!(doc["start"]["url"], url, "{doc:#}");
    assert_eq!(doc["start"]["protocol"], "h2");
    assert!(doc.get("error").is_none(), "{doc:#}");
    for s in stages {
        let st = &doc[*s];
        assert!(st["throughput_bps"].as_f64().unwrap() > 1e8, "{s}: {st:#}");
        let count = |k: &str| st["loaded"][k]["count"].as_u64().unwrap_or(0);
        // Each foreign probe times three things (TCP, TLS, the request).
        assert!(
            count("foreign") >= 30 && count("foreign") % 3 == 0,
            "{s}: {st:#}"
        );
        assert!(count("self") >= 5, "{s}: {st:#}");
        assert_eq!(st["idle"]["count"], 10, "{s}");
        assert!(st["rpm"].as_f64().unwrap() > 0.0);
        assert!(st["foreign_rpm"].as_f64().unwrap() > 0.0);
        assert!(st["loaded_rpm"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn our_client_measures_against_our_server() {
    let (srv, port) = rpm_server(&[]);
    let url = config_url(port);
    let doc = measure(&url, "down,up", "4");
    check_client_doc(&doc, &url, &["downlink", "uplink"]);
    drop(srv);
}

/// The reference server (Debian's nginx as Apple describes it), started by
/// the script beside the spec, on `port`; stopped on drop.
struct Reference {
    dir: PathBuf,
}

impl Reference {
    fn start(port: u16) -> Option<Self> {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpm-server/start.sh");
        if !common::require(
            script.is_file(),
            "the reference RPM server (tests/fixtures/rpm-server)",
        ) || !require_tool("nginx")
        {
            return None;
        }
        let dir = common::scratch_file(&format!("rpm-ref-{port}"));
        let sink = free_port().to_string();
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .args(["127.0.0.1", &port.to_string()])
            .env("SINK_PORT", &sink)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "the reference did not start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        common::wait_for_listener(port, Duration::from_secs(5));
        Some(Self { dir })
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        for f in ["nginx.pid", "slurp.pid"] {
            if let Ok(pid) = std::fs::read_to_string(self.dir.join(f)) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
    }
}

#[test]
fn our_client_measures_against_the_nginx_reference() {
    let port = free_port();
    let Some(r) = Reference::start(port) else {
        return;
    };
    let url = config_url(port);
    let doc = measure(&url, "down,up", "4");
    check_client_doc(&doc, &url, &["downlink", "uplink"]);
    // A config with Apple's spelling of the keys only is read as well.
    let cfg = r.dir.join("root/api/v1/config");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let urls = doc["urls"].as_object_mut().unwrap();
    urls.retain(|k, _| !k.contains("https"));
    assert_eq!(urls.len(), 3);
    std::fs::write(r.dir.join("root/api/v1/apple"), doc.to_string()).unwrap();
    let apple = format!("https://127.0.0.1:{port}/api/v1/apple");
    let doc = measure(&apple, "down", "3");
    assert!(doc["downlink"]["throughput_bps"].as_f64().unwrap() > 1e8);
}

#[test]
fn certificates_are_checked_unless_insecure() {
    if !require_tool("openssl") {
        return;
    }
    let dir = common::scratch_file("rpm-cert");
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        // An end entity, not a CA: certificate checks refuse a CA as the server's.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (c, k) = (cert.display().to_string(), key.display().to_string());
    let (srv, port) = rpm_server(&["--tls-cert", &c, "--tls-key", &k]);
    // The printed fingerprint is the certificate's, as openssl computes it.
    let fp = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in", &c])
        .output()
        .unwrap();
    let fp = String::from_utf8_lossy(&fp.stdout);
    let fp = fp.trim().rsplit('=').next().unwrap().to_string();
    assert!(
        srv.stdout()
            .contains(&format!("(certificate SHA-256 {fp})")),
        "{}",
        srv.stdout()
    );
    let url = config_url(port);
    let args = ["--rpm-url", &url, "--rpm-stages", "down", "--rpm-time", "2"];
    // Not trusted: refused before any load.
    let out = run_client(&args, Duration::from_secs(30));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("unable to read the config at")
            && out
                .stderr
                .contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        out.stderr
    );
    // Trusted through the system store's variable: measured.
    let trust = format!("SSL_CERT_FILE={c}");
    let bin = common::rperf3().display().to_string();
    let mut with_env = vec![trust.as_str(), bin.as_str()];
    with_env.extend(args);
    let out = common::run_program("env", &with_env, Duration::from_secs(30));
    out.assert_ok();
    assert!(
        out.stdout.contains("downlink:      Responsiveness: "),
        "{}",
        out.stdout
    );
    drop(srv);
}

#[test]
fn visits_take_the_servers_test_slots() {
    if !require_tool("curl") {
        return;
    }
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let (srv, port) = rpm_server(&["--metrics", &maddr]);
    let cfg = config_url(port);
    // An iperf3 test holds the only slot: a visitor is told to come back.
    let iperf = srv.spawn_client(&["-t", "3"]);
    assert!(srv.wait_stdout_until(Duration::from_secs(10), |s| s
        .contains("Accepted connection")));
    let (code, head, body) = curl(&["--http2"], &cfg);
    assert_eq!(code, 429, "{head}{body}");
    assert!(head.contains("retry-after: 1"), "{head}");
    assert!(iperf.finish(Duration::from_secs(20)).status.success());
    // Free again: the visit holds the slot while it lasts, and a linger after.
    let (code, _, body) = curl(&["--http2"], &cfg);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"https_upload_url\""));
    let refused = srv.client(&["-t", "1"]);
    assert_eq!(refused.code(), Some(1));
    assert!(
        refused.stderr.contains("the server is busy"),
        "{}",
        refused.stderr
    );
    let m = prom::scrape_until(mport, "the visit ended", |m| prom::outcome(m, "ok") >= 2.0);
    assert_eq!(
        prom::outcome(&m, "refused"),
        2.0,
        "one visitor, one iperf3 client"
    );
    srv.client(&["-t", "1"]).assert_ok();
}

#[test]
fn a_one_off_server_exits_after_its_visit() {
    if !require_tool("curl") {
        return;
    }
    let (srv, port) = rpm_server(&["-1"]);
    let t = Instant::now();
    let (code, _, _) = curl(&["--http2"], &format!("https://127.0.0.1:{port}/small"));
    assert_eq!(code, 200);
    let out = srv.wait_exit(Duration::from_secs(15));
    assert!(out.status.success(), "{out}");
    assert!(t.elapsed() >= LINGER, "exited before the visit's linger");
}

/// Connects to `port` and writes `bytes` at once.
fn raw(port: u16, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// Reads until the server closes `s`: how long that took from `t`.
fn closed_after(mut s: TcpStream, t: Instant) -> Duration {
    use std::io::Read;
    s.set_read_timeout(Some(DEADLINE + LATE * 2)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("still open after {:?}: {e}", t.elapsed()),
        }
    }
}

#[test]
fn hostile_clients_end_on_their_deadlines_and_the_iperf3_port_serves_on() {
    if !require_tool("curl") || !require_tool("openssl") {
        return;
    }
    // The hostile clients' visit holds a slot: the iperf3 client needs another.
    let (srv, port) = rpm_server(&["--max-tests", "2"]);
    let t = Instant::now();
    // Garbage instead of a TLS hello: refused at once.
    let garbage = raw(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(closed_after(garbage, t) < LATE);
    // A slowloris: a TLS record header a byte at a time; the handshake's
    // deadline is absolute, so the trickle does not move it.
    let slow = std::thread::spawn(move || {
        let t = Instant::now();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut reader = s.try_clone().unwrap();
        let feeder = std::thread::spawn(move || {
            for b in [0x16u8, 0x03, 0x01, 0x40, 0x00].iter().cycle().take(60) {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(400));
            }
        });
        let took = {
            use std::io::Read;
            reader.set_read_timeout(Some(DEADLINE * 3)).unwrap();
            let mut b = [0u8; 64];
            while matches!(reader.read(&mut b), Ok(n) if n > 0) {}
            t.elapsed()
        };
        let _ = feeder.join();
        took
    });
    // A client that stops reading `large` (1 byte/s off a window that fills).
    let stall_t = Instant::now();
    let url = format!("https://127.0.0.1:{port}/api/v1/large");
    let mut stalled = Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "--limit-rate",
            "1",
            "--max-time",
            "40",
            "-o",
            "/dev/null",
            &url,
        ])
        .spawn()
        .unwrap();
    // An upload that never ends: 1 MB, then its body stays open.
    let up = format!("https://127.0.0.1:{port}/api/v1/upload");
    let mut unfinished = Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "--max-time",
            "40",
            "-T",
            "-",
            "-o",
            "/dev/null",
            &up,
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut body = unfinished.stdin.take().unwrap();
    body.write_all(&vec![0u8; 1 << 20]).unwrap();
    // HTTP/1.1 only: told so plainly.
    let (code, _, text) = curl(&["--http1.1"], &format!("https://127.0.0.1:{port}/small"));
    assert_eq!(
        (code, text.as_str()),
        (505, "this server speaks HTTP/2 only\n")
    );
    // TLS 1.2 only: no handshake.
    let tls12 = Command::new("openssl")
        .args([
            "s_client",
            "-tls1_2",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!tls12.status.success());
    // The iperf3 port is not held by any of them.
    srv.client(&["-t", "1"]).assert_ok();
    let took = slow.join().unwrap();
    assert!(
        took >= DEADLINE - Duration::from_millis(100) && took < DEADLINE + LATE,
        "the slowloris was closed after {took:?}"
    );
    let lines = [
        "TLS handshake failed: received corrupt message",
        "no TLS handshake within 10 s; closed",
        "read nothing of large for 10 s; stream reset",
        "sent nothing of its upload for 10 s; stream reset",
        "an HTTP/1.1 client refused (HTTP/2 only)",
        "TLS handshake failed: peer is incompatible: SupportedVersionsExtensionRequired",
    ];
    let seen = srv
        .proc()
        .wait_stderr_until(DEADLINE * 3, |e| lines.iter().all(|l| e.contains(l)));
    let stalls_took = stall_t.elapsed();
    let _ = stalled.kill();
    let _ = unfinished.kill();
    drop(body);
    let _ = (stalled.wait(), unfinished.wait());
    assert!(seen, "stderr: {}", srv.stderr());
    // Each stream's stall deadline is absolute from its last byte: both
    // ended well before curl's own 40 s.
    assert!(stalls_took < DEADLINE * 3, "{stalls_took:?}");
    for l in srv.stderr().lines().filter(|l| l.contains("rpm-http:")) {
        assert!(l.starts_with("rperf3: rpm-http: 127.0.0.1:"), "{l}");
    }
    srv.client(&["-t", "1"]).assert_ok();
}

/// `openssl s_client -alpn h2` to `port`, `input` on its stdin: it finishes
/// the handshake, writes `input` and leaves at its end.
fn tls_visit(port: u16, input: &[u8]) {
    let mut c = Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-no_ign_eof",
            "-alpn",
            "h2",
            "-connect",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl runs");
    c.stdin.take().unwrap().write_all(input).unwrap();
    let _ = c.wait();
}

#[test]
fn a_client_gone_after_its_handshake_is_no_line_but_one_speaking_http1_is() {
    if !require_tool("openssl") {
        return;
    }
    // The debug lines show each connection's end, so the test waits for it.
    let (srv, port) = rpm_server(&["--debug"]);
    tls_visit(port, b"");
    let left = "left before its HTTP/2 preface";
    assert!(
        srv.proc().wait_stderr_until(DEADLINE, |e| e.contains(left)),
        "{}",
        srv.stderr()
    );
    // What it says is not HTTP/2 at all: worth a line.
    tls_visit(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        srv.proc()
            .wait_stderr_until(DEADLINE, |e| e.contains(": not HTTP/2: ")),
        "{}",
        srv.stderr()
    );
    // That line is the only one: the client that left made none.
    let err = srv.stop().stderr;
    let notes = err
        .lines()
        .filter(|l| l.contains("rpm-http:") && !l.contains("debug:"));
    assert_eq!(notes.count(), 1, "{err}");
}
