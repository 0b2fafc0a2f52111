//! The connection back of iperf 2's `-d` and `-r` on the client: its
//! listener, the accepted connection and the receiver that counts it.

use super::*;

impl Client<'_> {
    /// `-d`/`-r`: the listener for the connection back.
    pub(super) fn listen(&self) -> Result<Option<TcpListener>, String> {
        if !self.legacy() {
            return Ok(None);
        }
        let port = self.cl.listen_port.unwrap_or(self.c.port);
        let bind = self.c.bind.as_ref().map(|b| b.host.as_str());
        let l = net::listen_tcp(None, None, port, self.c.family)
            .or_else(|_| net::listen_tcp(bind, None, port, self.c.family))
            .map_err(|e| format!("ERROR: listen on port {port} for the connection back: {e}"))?;
        let mut c = self.c.clone();
        c.window = self.c.window;
        let block = tcp_setup::listener_settings(&l, &c, port, self.len);
        self.report.event(Event2::Settings(block));
        Ok(Some(l))
    }

    /// Receives on connection back `id` (`-d` and `-r` alike): its rows join
    /// `iv` and a receiver thread starts.
    pub(super) fn receive_back(
        &self,
        id: u32,
        s: &Arc<TcpStream>,
        iv: &Intervals,
        wake: &Wake,
        w: &mut Workers,
    ) -> Result<(), String> {
        let st = Arc::new(FlowStats::new(self.len));
        iv.add(
            key(id, Dir::Recv),
            FlowSpec::of(Tag2::Id(id), Dir::Recv, &st, s, addrs_of(s)),
        );
        let waker = wake.waker().map_err(|e| e.to_string())?;
        w.recv(
            s,
            (self.len, true, ReadHow::Plain),
            &st,
            (iv.ender(), key(id, Dir::Recv)),
            waker,
        )
        .map_err(|e| e.to_string())
    }

    /// `-d`: waits (a slice at a time) for a connection back and starts its receiver.
    pub(super) fn accept_one(
        &self,
        (l, ip): (&TcpListener, std::net::IpAddr),
        back: &mut Back,
        run: &mut Run<'_>,
        intr: &mut Interrupt,
    ) -> Result<(), String> {
        let (iv, wake) = (run.iv, run.wake);
        let w = &mut *run.w;
        let slice = (Instant::now() + Duration::from_millis(200)).min(back.due);
        let got =
            accept_back(l, ip, slice, &|| false, Some(intr.fd())).map_err(|e| e.to_string())?;
        match got {
            Some(s) => {
                let s = Arc::new(s);
                let id = back.next_id;
                back.next_id += 1;
                back.pending -= 1;
                if let Ok(line) = tcp_setup::connection(Tag2::Id(id), &s, &[], None) {
                    self.report.event(Event2::Connected(line));
                }
                self.receive_back(id, &s, iv, wake, w)?;
            }
            None if Instant::now() >= back.due => {
                back.pending = 0;
                self.report.event(Event2::Message(NO_BACK.into()));
            }
            None => {}
        }
        Ok(())
    }

    /// `-r`: after the forward test, receives the server's connections back.
    pub(super) fn tradeoff_back(
        &self,
        l: &TcpListener,
        ip: std::net::IpAddr,
        p: u32,
        intr: &mut Interrupt,
    ) -> Result<(), String> {
        let due = Instant::now() + BACK_GRACE;
        let wake = Wake::new().map_err(|e| e.to_string())?;
        let mut w = Workers::default();
        let mut iv = None;
        for id in p + 1..=2 * p {
            let s = match accept_back(l, ip, due, &|| false, Some(intr.fd())) {
                Ok(Some(s)) => Arc::new(s),
                _ => {
                    self.report.event(Event2::Message(NO_BACK.into()));
                    break;
                }
            };
            if let Ok(line) = tcp_setup::connection(Tag2::Id(id), &s, &[], None) {
                self.report.event(Event2::Connected(line));
            }
            let set = iv.get_or_insert_with(|| {
                Intervals::start(
                    self.report.clone(),
                    Instant::now(),
                    self.c.interval,
                    (p > 1).then_some(SumKind::Sum),
                )
            });
            self.receive_back(id, &s, set, &wake, &mut w)?;
        }
        while !w.finished() {
            if intr.triggered() {
                w.abort();
            }
            tcp_setup::wait(&[intr.fd(), wake.fd()], Some(Duration::from_millis(500)));
            wake.clear();
        }
        w.join();
        if let Some(set) = iv {
            set.finish();
        }
        Ok(())
    }
}
