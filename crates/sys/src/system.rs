//! Facts about the host: the uname line iperf3 prints and puts in JSON.
#![forbid(unsafe_code)]

/// `"<sysname> <nodename> <release> <version> <machine>"`, as iperf3's `system_info`.
pub fn uname_line() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) => format!(
            "{} {} {} {} {}",
            u.sysname().to_string_lossy(),
            u.nodename().to_string_lossy(),
            u.release().to_string_lossy(),
            u.version().to_string_lossy(),
            u.machine().to_string_lossy()
        ),
        Err(_) => String::from("unknown"),
    }
}

/// This host's name (uname's nodename), when it has one.
pub fn hostname() -> Option<String> {
    let u = nix::sys::utsname::uname().ok()?;
    let n = u.nodename().to_string_lossy().into_owned();
    (!n.is_empty()).then_some(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn uname_has_five_fields_at_least() {
        let l = super::uname_line();
        assert!(l.split(' ').count() >= 5, "{l}");
    }
}
