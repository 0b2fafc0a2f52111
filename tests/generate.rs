//! `rperf3 --generate`: the man page passes groff's warnings check, the bash
//! completion completes options when bash drives it, and the zsh and fish
//! scripts parse in their shells.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{require_tool, run_client, run_program, scratch_file};

const TIMEOUT: Duration = Duration::from_secs(30);

fn generate(kind: &str) -> String {
    let out = run_client(&["--generate", kind], TIMEOUT);
    out.assert_ok();
    assert_eq!(out.stderr, "");
    out.stdout
}

#[test]
fn man_page_renders_without_warnings() {
    if !require_tool("groff") {
        return;
    }
    let page = scratch_file("rperf3.1");
    std::fs::write(&page, generate("man")).unwrap();
    let p = page.display().to_string();
    let out = run_program("groff", &["-man", "-ww", "-z", &p], TIMEOUT);
    out.assert_ok();
    assert_eq!(out.stderr, "", "groff warned:\n{out}");
    // The formatted text has every section and documents options by name.
    let text = run_program("groff", &["-man", "-Tascii", "-P-cbou", &p], TIMEOUT);
    text.assert_ok();
    let plain = text.stdout;
    for want in [
        "SERVER OR CLIENT OPTIONS",
        "CLIENT OPTIONS",
        "COMMANDS",
        "EXIT STATUS",
        "EXAMPLES",
        "-t, --time #",
        "--server-bitrate-limit #[KMG][/#]",
        "--sctp",
        "--username name",
        "plot RUN.json",
        "MESH",
        "--peers-k8s SERVICE",
        "--cycle-bytes N",
    ] {
        assert!(plain.contains(want), "{want:?} missing:\n{plain}");
    }
}

/// What bash's completion function offers for the words typed so far.
fn bash_complete(script: &str, words: &[&str]) -> Vec<String> {
    let file = scratch_file("rperf3.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cmd = format!(
        "source '{}' && COMP_WORDS=({}) && COMP_CWORD={} && _rperf3 && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let out = run_program("bash", &["-c", &cmd], TIMEOUT);
    out.assert_ok();
    // printf prints one empty line for an empty array.
    out.stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn bash_completion_completes_options() {
    if !require_tool("bash") {
        return;
    }
    let script = generate("complete-bash");
    let got = bash_complete(&script, &["rperf3", "--ti"]);
    assert!(got.contains(&"--time".to_string()), "{got:?}");
    assert!(got.iter().all(|w| w.starts_with("--ti")), "{got:?}");
    assert_eq!(
        bash_complete(&script, &["rperf3", "-c", "h", "--format", "g"]),
        ["g"]
    );
    assert_eq!(
        bash_complete(&script, &["rperf3", "--dscp", "af4"]),
        ["af41", "af42", "af43"]
    );
    assert_eq!(bash_complete(&script, &["rperf3", "pl"]), ["plot"]);
    assert_eq!(bash_complete(&script, &["rperf3", "ip"]), ["iperf2"]);
    assert_eq!(bash_complete(&script, &["rperf3", "me"]), ["mesh"]);
    assert_eq!(
        bash_complete(&script, &["rperf3", "mesh", "--peers-"]),
        ["--peers-dns", "--peers-k8s"]
    );
    assert_eq!(
        bash_complete(&script, &["rperf3", "--generate", "complete-z"]),
        ["complete-zsh"]
    );
    assert_eq!(
        bash_complete(&script, &["rperf3", "plot", "a.json", "--ou"]),
        ["--output"]
    );
    // An option's numeric argument: nothing to offer.
    assert!(bash_complete(&script, &["rperf3", "-t", ""]).is_empty());
    // Every iperf3 option is offered, the newest ones included.
    assert_eq!(bash_complete(&script, &["rperf3", "--sct"]), ["--sctp"]);
    assert_eq!(
        bash_complete(&script, &["rperf3", "--rsa-pu"]),
        ["--rsa-public-key-path"]
    );
}

/// Runs `shell -n` on the script when the shell is installed; these shells are
/// not required in CI (bash is the one driven for real above).
fn syntax_check(shell: &str, kind: &str) {
    let found = Command::new(shell)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!("note: {shell} not found, skipping its syntax check");
        return;
    }
    let file = scratch_file(&format!("rperf3.{shell}"));
    std::fs::write(&file, generate(kind)).unwrap();
    let f = file.display().to_string();
    let out = run_program(shell, &["-n", &f], TIMEOUT);
    out.assert_ok();
    assert_eq!(out.stderr, "", "{out}");
}

#[test]
fn zsh_and_fish_scripts_parse() {
    syntax_check("zsh", "complete-zsh");
    syntax_check("fish", "complete-fish");
}

#[test]
fn fish_completion_offers_options_when_fish_is_installed() {
    let found = Command::new("fish")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!("note: fish not found, skipping");
        return;
    }
    let file = scratch_file("rperf3.fish");
    std::fs::write(&file, generate("complete-fish")).unwrap();
    let cmd = format!("source '{}'; complete -C 'rperf3 --ti'", file.display());
    let out = run_program("fish", &["--no-config", "-c", &cmd], TIMEOUT);
    out.assert_ok();
    assert!(
        out.stdout.lines().any(|l| l.starts_with("--time\t")),
        "{out}"
    );
}

#[test]
fn help_lists_the_commands_after_iperf3s_sections() {
    let out = run_client(&["--help"], TIMEOUT);
    out.assert_ok();
    let h = &out.stdout;
    let client = h.find("Client specific:\n").unwrap();
    let commands = h.find("rperf3 commands (first argument only):\n").unwrap();
    assert!(client < commands);
    assert!(h[commands..].contains("  plot RUN.json"));
    assert!(h[commands..].contains("  --generate man|complete-bash|complete-zsh|complete-fish"));
    let bad = run_client(&["--generate", "pdf"], TIMEOUT);
    assert_eq!(bad.code(), Some(1));
    assert!(
        bad.stderr.contains("--generate: unknown kind 'pdf'"),
        "{bad}"
    );
}
