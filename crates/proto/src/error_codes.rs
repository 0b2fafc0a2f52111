//! iperf3's error numbers (`i_errno`), named as in iperf3 (`IEACCESSDENIED` is
//! [`IE_ACCESS_DENIED`]).
//!
//! They are wire values: a server sends them after SERVER_ERROR, and both sides
//! print their texts (see [`crate::IperfError`]).

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $val:expr;)*) => {
        $($(#[$doc])* pub const $name: i32 = $val;)*
    };
}

codes! {
    /// 0: no error.
    IE_NONE = 0;
    /// 1: cannot be both server and client.
    IE_SERV_CLIENT = 1;
    /// 2: must either be a client (-c) or server (-s).
    IE_NO_ROLE = 2;
    /// 3: server-only option given to a client.
    IE_SERVER_ONLY = 3;
    /// 4: client-only option given to a server.
    IE_CLIENT_ONLY = 4;
    /// 5: test duration out of range.
    IE_DURATION = 5;
    /// 6: bad number of parallel streams.
    IE_NUM_STREAMS = 6;
    /// 7: block size too large.
    IE_BLOCK_SIZE = 7;
    /// 8: socket buffer size too large.
    IE_BUF_SIZE = 8;
    /// 9: bad report interval.
    IE_INTERVAL = 9;
    /// 10: MSS too large.
    IE_MSS = 10;
    /// 11: no sendfile on this OS.
    IE_NO_SENDFILE = 11;
    /// 12: bad --omit.
    IE_OMIT = 12;
    /// 13: not implemented.
    IE_UNIMP = 13;
    /// 14: cannot open -F file.
    IE_FILE = 14;
    /// 15: bad burst count.
    IE_BURST = 15;
    /// 16: more than one of -t, -n, -k.
    IE_END_CONDITIONS = 16;
    /// 17: cannot open log file.
    IE_LOG_FILE = 17;
    /// 18: no SCTP support.
    IE_NO_SCTP = 18;
    /// 19: --bind needed for --cport (unused).
    IE_BIND = 19;
    /// 20: UDP block size out of range.
    IE_UDP_BLOCK_SIZE = 20;
    /// 21: bad TOS.
    IE_BAD_TOS = 21;
    /// 22: incomplete client authentication settings.
    IE_SET_CLIENT_AUTH = 22;
    /// 23: incomplete server authentication settings.
    IE_SET_SERVER_AUTH = 23;
    /// 24: bad -f letter.
    IE_BAD_FORMAT = 24;
    /// 25: -R together with --bidir.
    IE_REVERSE_BIDIR = 25;
    /// 26: bad port.
    IE_BAD_PORT = 26;
    /// 27: total rate above the server's limit.
    IE_TOTAL_RATE = 27;
    /// 28: bad averaging interval for the server rate limit.
    IE_TOTAL_INTERVAL = 28;
    /// 29: bad skew threshold.
    IE_SKEW_THRESHOLD = 29;
    /// 30: bad idle timeout.
    IE_IDLE_TIMEOUT = 30;
    /// 31: bad receive timeout.
    IE_RCV_TIMEOUT = 31;
    /// 32: receive timeout only valid when receiving.
    IE_RVRS_ONLY_RCV_TIMEOUT = 32;
    /// 33: bad send timeout.
    IE_SND_TIMEOUT = 33;
    /// 34: file transfer with UDP.
    IE_UDP_FILE_TRANSFER = 34;
    /// 35: cannot read the authorized users file.
    IE_SERVER_AUTH_USERS = 35;
    /// 36: bad control keepalive settings.
    IE_CNTL_KA = 36;
    /// 37: requested duration above the server's maximum.
    IE_MAX_SERVER_TEST_DURATION_EXCEEDED = 37;
    /// 38: bad unit value or suffix.
    IE_UNIT_VAL = 38;
    /// 39: no --skip-rx-copy on this OS.
    IE_RVRS_ONLY_SKIP_RX_COPY = 39;
    /// 40: bad DSCP value.
    IE_BAD_DSCP = 40;
    /// 100: cannot create a test.
    IE_NEW_TEST = 100;
    /// 101: test initialisation failed.
    IE_INIT_TEST = 101;
    /// 102: cannot listen.
    IE_LISTEN = 102;
    /// 103: cannot connect to the server.
    IE_CONNECT = 103;
    /// 104: cannot accept.
    IE_ACCEPT = 104;
    /// 105: cannot send the cookie.
    IE_SEND_COOKIE = 105;
    /// 106: cannot receive the cookie.
    IE_RECV_COOKIE = 106;
    /// 107: control write failed.
    IE_CTRL_WRITE = 107;
    /// 108: control read failed.
    IE_CTRL_READ = 108;
    /// 109: control connection closed unexpectedly.
    IE_CTRL_CLOSE = 109;
    /// 110: unknown or misplaced control message.
    IE_MESSAGE = 110;
    /// 111: cannot send a control message.
    IE_SEND_MESSAGE = 111;
    /// 112: cannot receive a control message.
    IE_RECV_MESSAGE = 112;
    /// 113: cannot send parameters.
    IE_SEND_PARAMS = 113;
    /// 114: cannot receive (or parse) parameters.
    IE_RECV_PARAMS = 114;
    /// 115: cannot package results.
    IE_PACKAGE_RESULTS = 115;
    /// 116: cannot send results.
    IE_SEND_RESULTS = 116;
    /// 117: cannot receive (or parse) results.
    IE_RECV_RESULTS = 117;
    /// 118: select failed.
    IE_SELECT = 118;
    /// 119: the client has terminated.
    IE_CLIENT_TERM = 119;
    /// 120: the server has terminated.
    IE_SERVER_TERM = 120;
    /// 121: the server is busy.
    IE_ACCESS_DENIED = 121;
    /// 122: cannot set TCP_NODELAY.
    IE_SET_NODELAY = 122;
    /// 123: cannot set the MSS.
    IE_SET_MSS = 123;
    /// 124: cannot set a socket buffer size.
    IE_SET_BUF = 124;
    /// 125: cannot set IP TOS.
    IE_SET_TOS = 125;
    /// 126: cannot set the IPv6 traffic class.
    IE_SET_COS = 126;
    /// 127: cannot set the IPv6 flow label.
    IE_SET_FLOW = 127;
    /// 128: cannot reuse the address.
    IE_REUSE_ADDR = 128;
    /// 129: cannot make a socket non-blocking.
    IE_NON_BLOCKING = 129;
    /// 130: cannot set the window size.
    IE_SET_WINDOW_SIZE = 130;
    /// 131: protocol does not exist.
    IE_PROTOCOL = 131;
    /// 132: cannot set CPU affinity.
    IE_AFFINITY = 132;
    /// 133: cannot daemonise.
    IE_DAEMON = 133;
    /// 134: congestion control algorithm not available.
    IE_SET_CONGESTION = 134;
    /// 135: cannot write the PID file.
    IE_PID_FILE = 135;
    /// 136: cannot set IPV6_V6ONLY.
    IE_V6_ONLY = 136;
    /// 137: cannot set SCTP_DISABLE_FRAGMENTS.
    IE_SET_SCTP_DISABLE_FRAG = 137;
    /// 138: cannot set the number of SCTP streams.
    IE_SET_SCTP_NSTREAM = 138;
    /// 139: SCTP bindx failed (iperf3 has no text for it).
    IE_SET_SCTP_BINDX = 139;
    /// 140: cannot set socket pacing.
    IE_SET_PACING = 140;
    /// 141: the kernel gave a smaller socket buffer than asked.
    IE_SET_BUF2 = 141;
    /// 142: authentication failed.
    IE_AUTH_TEST = 142;
    /// 143: cannot bind to device.
    IE_BIND_DEV = 143;
    /// 144: idle timeout while receiving data.
    IE_NO_MSG = 144;
    /// 145: cannot set Don't Fragment.
    IE_SET_DONT_FRAGMENT = 145;
    /// 146: `ip%dev` without bind-to-device support.
    IE_BIND_DEV_NO_SUPPORT = 146;
    /// 147: `ip%dev` only for IPv6 link-local addresses.
    IE_HOST_DEV = 147;
    /// 148: cannot set TCP_USER_TIMEOUT.
    IE_SET_USER_TIMEOUT = 148;
    /// 150: cannot create a thread.
    IE_PTHREAD_CREATE = 150;
    /// 151: cannot cancel a thread.
    IE_PTHREAD_CANCEL = 151;
    /// 152: cannot join a thread.
    IE_PTHREAD_JOIN = 152;
    /// 153: cannot create thread attributes.
    IE_PTHREAD_ATTR_INIT = 153;
    /// 154: cannot destroy thread attributes.
    IE_PTHREAD_ATTR_DESTROY = 154;
    /// 155: cannot set SO_KEEPALIVE.
    IE_SET_CNTL_KA = 155;
    /// 156: cannot set TCP_KEEPIDLE.
    IE_SET_CNTL_KA_KEEPIDLE = 156;
    /// 157: cannot set TCP_KEEPINTVL.
    IE_SET_CNTL_KA_INTERVAL = 157;
    /// 158: cannot set TCP_KEEPCNT.
    IE_SET_CNTL_KA_COUNT = 158;
    /// 159: cannot change the signal mask.
    IE_PTHREAD_SIGMASK = 159;
    /// 160: the server's safety timer for the test expired.
    IE_SERVER_TEST_DURATION_EXPIRED = 160;
    /// 200: cannot create a stream.
    IE_CREATE_STREAM = 200;
    /// 201: cannot initialise a stream.
    IE_INIT_STREAM = 201;
    /// 202: cannot start the stream listener.
    IE_STREAM_LISTEN = 202;
    /// 203: cannot connect a stream.
    IE_STREAM_CONNECT = 203;
    /// 204: cannot accept a stream.
    IE_STREAM_ACCEPT = 204;
    /// 205: stream write failed.
    IE_STREAM_WRITE = 205;
    /// 206: stream read failed.
    IE_STREAM_READ = 206;
    /// 207: stream closed unexpectedly.
    IE_STREAM_CLOSE = 207;
    /// 208: results name an unknown stream id.
    IE_STREAM_ID = 208;
    /// 300: cannot create a timer.
    IE_NEW_TIMER = 300;
    /// 301: cannot update a timer.
    IE_UPDATE_TIMER = 301;
}
