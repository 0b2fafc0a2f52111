//! `rperf3 mesh`: the fleet agent, one per node.
//!
//! It is a front end over the same server and client as `rperf3 -s` and
//! `rperf3 -c`: its server serves whoever tests this node, and on the plan
//! every agent computes alike ([`rperf3_mesh::schedule`]) it tests the other
//! members, writing one record per test (stdout) and keeping each pair's
//! last figures as Prometheus series (`--metrics`). What decides is in the
//! `rperf3-mesh` crate; this module does the I/O.

mod agent;
pub(crate) mod args;
mod discover;
mod pair_test;
mod serve;
mod text;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

use rperf3_app::config::OutputConfig;
use rperf3_app::Exclusive;
use rperf3_mesh::Series;

use agent::{Agent, Ended};
use args::{parse_mesh, MeshArgs, MeshCommand};
use discover::Discovery;

/// The sub-command's name.
pub(crate) const SUBCOMMAND: &str = "mesh";

/// Runs `rperf3 mesh ARGS`.
pub(crate) fn main(prog: &str, args: &[OsString]) -> ExitCode {
    match parse_mesh(prog, args) {
        Ok(MeshCommand::Help(h)) => crate::print_and_exit(&h, 0),
        Ok(MeshCommand::Run(a)) => match run(prog, &a) {
            Ok(status) => ExitCode::from(status),
            Err(e) => {
                eprintln!("{prog}: mesh: {e}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprint!("{}", e.message);
            ExitCode::from(e.status.clamp(0, 255) as u8)
        }
    }
}

fn run(prog: &str, a: &MeshArgs) -> Result<u8, String> {
    let out = OutputConfig {
        logfile: a.logfile.clone(),
        ..OutputConfig::default()
    };
    let sink = crate::output::Sink::open(&out).map_err(|e| format!("{e:#}"))?;
    // Served tests and cycles are the agent's record: logged by default.
    crate::logger::init(if a.debug { 4 } else { 3 }, sink.log());
    let r = serve_and_test(prog, a, &sink);
    // What is queued (a failed start's reason too) is written before the end.
    crate::drain_at_exit(&sink);
    r
}

fn serve_and_test(prog: &str, a: &MeshArgs, sink: &crate::output::Sink) -> Result<u8, String> {
    let mut intr =
        crate::install_signals().map_err(|e| format!("unable to install signal handlers: {e}"))?;
    let discovery = Discovery::new(a);
    let series = Arc::new(Series::new(&discovery.name()));
    let exclusive = Exclusive::new();
    let server = serve::Server::start(prog, a, exclusive.clone(), series.clone())?;
    log::info!(
        "mesh agent {} serving on port {}{}",
        discovery.name(),
        a.port,
        a.metrics
            .map_or(String::new(), |m| format!(", metrics on {m}"))
    );
    let mut agent = Agent {
        prog,
        args: a,
        sink,
        series,
        exclusive,
        discovery,
        intr: &mut intr,
        member_said: None,
    };
    let ended = agent.run();
    if ended == Ended::Done && server.is_running() {
        // Others may still be finishing a test against this node.
        let until = agent::now() + a.slot;
        while agent.exclusive.is_busy() && agent::now() < until && !agent.intr.triggered() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    server.stop();
    Ok(0)
}
