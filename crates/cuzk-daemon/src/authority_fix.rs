//! The HTTP/2 `:authority` rewriter for Unix-socket connections, off
//! unless `[daemon] unix_authority_fix = true`.
//!
//! gRPC clients built on grpc-core (Python, C++, Ruby, PHP, ...) send the
//! percent-encoded socket path as `:authority` (`tmp%2Fcuzk.sock` for
//! `unix:///tmp/cuzk.sock`). The h2 crate under tonic rejects a request
//! whose `:authority` does not parse as a URI authority with a stream reset
//! (PROTOCOL_ERROR) before any tower layer sees it
//! (hyperium/h2#487, hyperium/tonic#243). [`AuthorityFix`] therefore sits
//! between the socket and h2: it decodes every header block the client
//! sends (HPACK, with the client's dynamic table), replaces an
//! `:authority` that is no valid authority by `localhost` (what grpc-go
//! and tonic send on Unix sockets), and re-encodes the block for h2 with
//! literals only (so h2's own dynamic table stays empty and in step). All
//! other frames pass through unchanged.
//!
//! The rewriter runs before the token check, on whatever any local user
//! sends. A block is checked (`check_block`) before fluke-hpack decodes
//! it, since fluke-hpack panics on some malformed blocks; a connection
//! that breaks the protocol is closed with one warning naming the
//! client's pid and uid (`tests/fuzz.rs` fuzzes this path).
//!
//! The rewriter is opt-in: a client can instead set the channel option
//! `grpc.default_authority` to `localhost` (docs/OPERATING.md; the smoke
//! test calls the daemon from Python both ways).

use std::borrow::Cow;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context as TaskContext, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::codegen::http::uri::Authority;

const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Frames written to h2 stay within the smallest SETTINGS_MAX_FRAME_SIZE.
const OUT_FRAME: usize = 16_384;
/// Largest header block (all its frames) accepted from a client.
const MAX_BLOCK: usize = 1 << 20;
/// Largest decoded header list (RFC 7541 sizes: name + value + 32 each).
const MAX_DECODED: usize = 1 << 20;
/// The HPACK table size h2 advertises (it keeps the protocol default).
const TABLE_SIZE: usize = 4096;
/// Longest HPACK integer accepted, in octets with its prefix: fluke-hpack's
/// own limit (a longer one is an error there), which keeps values below 2^29.
const MAX_INTEGER_OCTETS: usize = 5;

enum State {
    /// Passing the client preface through; bytes still to pass.
    Preface(usize),
    /// Collecting a frame header.
    FrameHeader,
    /// Passing a frame's payload through; bytes still to pass.
    Pass(usize),
    /// Collecting a HEADERS or CONTINUATION payload.
    Payload {
        kind: u8,
        flags: u8,
        stream: u32,
        len: usize,
    },
}

/// A header block being assembled from HEADERS + CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
}

/// The client-to-server half of an HTTP/2 connection, rewritten so that h2
/// accepts the `:authority` grpc-core clients send on Unix sockets (see the
/// module documentation). Fed bytes in any split; emits whole frames.
pub struct AuthorityFix {
    state: State,
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    payload: Vec<u8>,
    block: Option<Block>,
    decoder: fluke_hpack::Decoder<'static>,
}

impl std::fmt::Debug for AuthorityFix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityFix").finish_non_exhaustive()
    }
}

impl Default for AuthorityFix {
    fn default() -> Self {
        let mut decoder = fluke_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(TABLE_SIZE);
        Self {
            state: State::Preface(PREFACE_LEN),
            header: [0; FRAME_HEADER_LEN],
            header_len: 0,
            payload: Vec::new(),
            block: None,
            decoder,
        }
    }
}

fn protocol_error(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// HPACK integer with an `prefix`-bit prefix; `first` holds the bits above it.
fn encode_integer(mut value: usize, prefix: u8, first: u8, out: &mut Vec<u8>) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header as an HPACK literal with a literal name, never entering the
/// dynamic table (never-indexed for credentials).
fn encode_literal(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    let first = if name == b"authorization" { 0x10 } else { 0x00 };
    out.push(first);
    encode_integer(name.len(), 7, 0, out);
    out.extend_from_slice(name);
    encode_integer(value.len(), 7, 0, out);
    out.extend_from_slice(value);
}

/// The HPACK integer with a `prefix`-bit prefix at the start of `buf`, and
/// its length in octets; `None` when it is cut off or longer than
/// [`MAX_INTEGER_OCTETS`].
fn decode_integer(buf: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let max = (1usize << prefix) - 1;
    let value = usize::from(*buf.first()?) & max;
    if value < max {
        return Some((value, 1));
    }
    let mut value = value;
    for (i, &octet) in buf.iter().enumerate().skip(1).take(MAX_INTEGER_OCTETS - 1) {
        value += usize::from(octet & 0x7f) << (7 * (i - 1));
        if octet & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Checks that `block` is a sequence of whole HPACK representations (RFC
/// 7541, section 6): every integer complete and at most
/// [`MAX_INTEGER_OCTETS`] long, every string inside the block, and dynamic
/// table size updates only before the first field (section 4.2).
///
/// fluke-hpack's decoder panics on a size update whose integer is cut off
/// or too long (it unwraps the integer's decoding); its other paths return
/// errors. A block that passes this check reaches only those, so a
/// malformed block is an error, never a panic (one client made 5,000
/// panics and 10.9 MB of log in 1.9 s; issue 34, item 6).
fn check_block(block: &[u8]) -> Result<(), &'static str> {
    const CUT: &str = "an HPACK integer is cut off or too long";
    let mut rest = block;
    let mut fields = false;
    while let Some(&first) = rest.first() {
        // (prefix bits, strings after the integer: a literal's name when
        // the index is 0, and its value)
        let (prefix, literal) = if first & 0x80 != 0 {
            (7, false)
        } else if first & 0x40 != 0 {
            (6, true)
        } else if first & 0x20 != 0 {
            if fields {
                return Err("an HPACK dynamic table size update after a header field");
            }
            (5, false)
        } else {
            (4, true)
        };
        fields |= first & 0xe0 != 0x20;
        let (index, mut len) = decode_integer(rest, prefix).ok_or(CUT)?;
        if literal {
            for _ in 0..if index == 0 { 2 } else { 1 } {
                let (n, l) = decode_integer(&rest[len..], 7).ok_or(CUT)?;
                len += l;
                if n > rest.len() - len {
                    return Err("an HPACK string runs past the end of its header block");
                }
                len += n;
            }
        }
        rest = &rest[len..];
    }
    Ok(())
}

fn frame_header(len: usize, kind: u8, flags: u8, stream: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Moves up to `left` bytes from the front of `input` to `out`, unchanged;
/// the bytes still to pass after them.
fn pass_through(left: usize, input: &mut &[u8], out: &mut Vec<u8>) -> usize {
    let n = left.min(input.len());
    out.extend_from_slice(&input[..n]);
    *input = &input[n..];
    left - n
}

impl AuthorityFix {
    /// Consumes `input`, appending what h2 should read to `out`. An error
    /// means the client broke the protocol; the connection should be closed.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        while !input.is_empty() {
            match self.state {
                State::Preface(left) => {
                    let left = pass_through(left, &mut input, out);
                    self.state = if left == 0 {
                        State::FrameHeader
                    } else {
                        State::Preface(left)
                    };
                }
                State::FrameHeader => {
                    let n = (FRAME_HEADER_LEN - self.header_len).min(input.len());
                    self.header[self.header_len..self.header_len + n].copy_from_slice(&input[..n]);
                    self.header_len += n;
                    input = &input[n..];
                    if self.header_len == FRAME_HEADER_LEN {
                        self.header_len = 0;
                        self.start_frame(out)?;
                    }
                }
                State::Pass(left) => {
                    let left = pass_through(left, &mut input, out);
                    self.state = if left == 0 {
                        State::FrameHeader
                    } else {
                        State::Pass(left)
                    };
                }
                State::Payload { len, .. } => {
                    let n = (len - self.payload.len()).min(input.len());
                    self.payload.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if self.payload.len() == len {
                        self.end_payload(out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn start_frame(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let h = self.header;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        let header_frame = kind == HEADERS || (kind == CONTINUATION && self.block.is_some());
        if self.block.is_some() && kind != CONTINUATION {
            return Err(protocol_error("HTTP/2 header block interrupted by another frame"));
        }
        if header_frame {
            let so_far = self.block.as_ref().map_or(0, |b| b.fragment.len());
            if so_far + len > MAX_BLOCK {
                return Err(protocol_error("HTTP/2 header block too large"));
            }
            self.payload.clear();
            self.state = State::Payload {
                kind,
                flags,
                stream,
                len,
            };
            if len == 0 {
                self.end_payload(out)?;
            }
        } else {
            out.extend_from_slice(&h);
            self.state = if len == 0 {
                State::FrameHeader
            } else {
                State::Pass(len)
            };
        }
        Ok(())
    }

    fn end_payload(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let State::Payload {
            kind, flags, stream, ..
        } = self.state
        else {
            unreachable!("end_payload outside a header payload");
        };
        self.state = State::FrameHeader;
        let payload = std::mem::take(&mut self.payload);
        if kind == HEADERS {
            let mut rest = &payload[..];
            let mut pad = 0;
            if flags & PADDED != 0 {
                let (&p, tail) = rest
                    .split_first()
                    .ok_or_else(|| protocol_error("HEADERS frame too short"))?;
                pad = p as usize;
                rest = tail;
            }
            let mut priority = None;
            if flags & PRIORITY != 0 {
                if rest.len() < 5 {
                    return Err(protocol_error("HEADERS frame too short"));
                }
                priority = Some([rest[0], rest[1], rest[2], rest[3], rest[4]]);
                rest = &rest[5..];
            }
            if pad > rest.len() {
                return Err(protocol_error("HEADERS padding exceeds the frame"));
            }
            self.block = Some(Block {
                stream,
                end_stream: flags & END_STREAM != 0,
                priority,
                fragment: rest[..rest.len() - pad].to_vec(),
            });
        } else {
            let block = self
                .block
                .as_mut()
                .expect("CONTINUATION is only collected within a block");
            if block.stream != stream {
                return Err(protocol_error("CONTINUATION on another stream"));
            }
            block.fragment.extend_from_slice(&payload);
        }
        if flags & END_HEADERS != 0 {
            let block = self.block.take().expect("a block is open");
            self.emit(block, out)?;
        }
        // Keep the buffer's allocation for the next frame.
        self.payload = payload;
        self.payload.clear();
        Ok(())
    }

    /// Decodes a complete header block and writes it back as literals, with
    /// an unparsable `:authority` replaced.
    fn emit(&mut self, block: Block, out: &mut Vec<u8>) -> io::Result<()> {
        check_block(&block.fragment).map_err(protocol_error)?;
        let mut encoded = Vec::with_capacity(block.fragment.len() + 64);
        let mut decoded = 0usize;
        self.decoder
            .decode_with_cb(&block.fragment, |name, value| {
                decoded += name.len() + value.len() + 32;
                if decoded > MAX_DECODED {
                    return;
                }
                let value = if &name[..] == b":authority" && Authority::try_from(&value[..]).is_err() {
                    Cow::Borrowed(&b"localhost"[..])
                } else {
                    value
                };
                encode_literal(&name, &value, &mut encoded);
            })
            .map_err(|e| protocol_error(format!("HPACK decoding failed: {e:?}")))?;
        if decoded > MAX_DECODED {
            return Err(protocol_error("HTTP/2 header list too large"));
        }
        let prefix = block.priority.map_or(0, |_| 5);
        let first = encoded.len().min(OUT_FRAME - prefix);
        let mut flags = if block.end_stream { END_STREAM } else { 0 };
        if block.priority.is_some() {
            flags |= PRIORITY;
        }
        if first == encoded.len() {
            flags |= END_HEADERS;
        }
        frame_header(prefix + first, HEADERS, flags, block.stream, out);
        if let Some(priority) = block.priority {
            out.extend_from_slice(&priority);
        }
        out.extend_from_slice(&encoded[..first]);
        let mut rest = &encoded[first..];
        while !rest.is_empty() {
            let n = rest.len().min(OUT_FRAME);
            let flags = if n == rest.len() { END_HEADERS } else { 0 };
            frame_header(n, CONTINUATION, flags, block.stream, out);
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        Ok(())
    }
}

/// A Unix-socket connection as tonic serves it: what the client sends goes
/// through [`AuthorityFix`] when the rewriter is on, else as it came; what
/// the server sends is written unchanged.
pub struct FixedStream {
    inner: tokio::net::UnixStream,
    fix: Option<AuthorityFix>,
    read_buf: Box<[u8]>,
    out: Vec<u8>,
    out_pos: usize,
    eof: bool,
}

impl std::fmt::Debug for FixedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedStream")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl FixedStream {
    /// Wraps an accepted connection, its `:authority` rewritten when
    /// `rewrite` (`[daemon] unix_authority_fix`).
    pub fn new(inner: tokio::net::UnixStream, rewrite: bool) -> Self {
        Self {
            inner,
            fix: rewrite.then(AuthorityFix::default),
            read_buf: vec![0; 64 << 10].into_boxed_slice(),
            out: Vec::new(),
            out_pos: 0,
            eof: false,
        }
    }
}

impl AsyncRead for FixedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(fix) = this.fix.as_mut() else {
            return Pin::new(&mut this.inner).poll_read(cx, dst);
        };
        loop {
            if this.out_pos < this.out.len() {
                let n = (this.out.len() - this.out_pos).min(dst.remaining());
                dst.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut this.read_buf);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                this.eof = true;
                continue;
            }
            if let Err(e) = fix.push(buf.filled(), &mut this.out) {
                // tonic logs a broken connection at debug level only; this
                // is the one line an operator sees, naming the client.
                let peer = this.inner.peer_cred().ok();
                tracing::warn!(
                    pid = peer.and_then(|p| p.pid()),
                    uid = peer.map(|p| p.uid()),
                    error = %e,
                    "closing a Unix-socket connection that broke the HTTP/2 protocol"
                );
                this.eof = true;
                this.out.clear();
                this.out_pos = 0;
                return Poll::Ready(Err(e));
            }
        }
    }
}

impl AsyncWrite for FixedStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for FixedStream {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame_header(payload.len(), kind, flags, stream, &mut out);
        out.extend_from_slice(payload);
        out
    }

    /// Splits h2 frames (after the preface) into (kind, flags, stream, payload).
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        assert!(bytes.starts_with(PREFACE));
        bytes = &bytes[PREFACE.len()..];
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
            let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
            frames.push((bytes[3], bytes[4], stream, bytes[9..9 + len].to_vec()));
            bytes = &bytes[9 + len..];
        }
        frames
    }

    fn run(input: &[u8], chunk: usize) -> Vec<u8> {
        let mut fix = AuthorityFix::default();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            fix.push(piece, &mut out).unwrap();
        }
        out
    }

    fn decode(blocks: &[Vec<u8>]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut decoder = fluke_hpack::Decoder::new();
        blocks.iter().map(|b| decoder.decode(b).unwrap()).collect()
    }

    /// What grpc-core sends: `:authority` as a literal with incremental
    /// indexing (so the second request refers to it by dynamic index 62),
    /// padding and a priority on the first frame, the block split over a
    /// CONTINUATION, a DATA frame in between.
    #[test]
    fn percent_encoded_authority_becomes_localhost_and_the_rest_is_kept() {
        let authority = b"tmp%2Fcuzk.sock";
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        block.push(0x41); // literal with incremental indexing, name = static 1 (:authority)
        block.push(authority.len() as u8);
        block.extend_from_slice(authority);
        block.push(0x04); // :path, literal without indexing, name = static 4
        let path = b"/cuzk.v1.ProvingEngine/GetStatus";
        block.push(path.len() as u8);
        block.extend_from_slice(path);
        encode_literal(b"te", b"trailers", &mut block);

        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[])); // SETTINGS
        let (head, tail) = block.split_at(10);
        let mut first = vec![3u8]; // pad length
        first.extend_from_slice(&[0, 0, 0, 0, 15]); // priority
        first.extend_from_slice(head);
        first.extend_from_slice(&[0, 0, 0]);
        input.extend(frame(HEADERS, PADDED | PRIORITY, 1, &first));
        input.extend(frame(CONTINUATION, END_HEADERS, 1, tail));
        input.extend(frame(0x0, END_STREAM, 1, &[0, 0, 0, 0, 0]));
        // Second request: everything by index, :authority from the dynamic table.
        input.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            3,
            &[0x83, 0x86, 0xbe, 0x84],
        ));

        for chunk in [1, 7, input.len()] {
            let out = run(&input, chunk);
            let frames = frames(&out);
            let kinds: Vec<u8> = frames.iter().map(|f| f.0).collect();
            assert_eq!(kinds, [0x4, HEADERS, 0x0, HEADERS], "chunk {chunk}");
            let (_, flags, stream, payload) = &frames[1];
            assert_eq!((*flags, *stream), (PRIORITY | END_HEADERS, 1));
            assert_eq!(&payload[..5], &[0, 0, 0, 0, 15]);
            assert_eq!(frames[2], (0x0, END_STREAM, 1, vec![0, 0, 0, 0, 0]));
            assert_eq!((frames[3].1, frames[3].2), (END_HEADERS | END_STREAM, 3));
            let lists = decode(&[payload[5..].to_vec(), frames[3].3.clone()]);
            let first: Vec<(&[u8], &[u8])> = lists[0].iter().map(|(n, v)| (&n[..], &v[..])).collect();
            assert_eq!(
                first,
                [
                    (&b":method"[..], &b"POST"[..]),
                    (b":scheme", b"http"),
                    (b":authority", b"localhost"),
                    (b":path", path),
                    (b"te", b"trailers"),
                ]
            );
            assert_eq!(lists[1][2], (b":authority".to_vec(), b"localhost".to_vec()));
            assert_eq!(lists[1][3], (b":path".to_vec(), b"/".to_vec()));
        }
    }

    #[test]
    fn valid_authorities_and_other_headers_are_unchanged() {
        // Both with incremental indexing (0x40, new name), as a client may send them.
        let mut block = Vec::new();
        for (n, v) in [
            (&b":authority"[..], &b"127.0.0.1:9820"[..]),
            (b"authorization", b"Bearer secret"),
        ] {
            block.push(0x40);
            encode_integer(n.len(), 7, 0, &mut block);
            block.extend_from_slice(n);
            encode_integer(v.len(), 7, 0, &mut block);
            block.extend_from_slice(v);
        }
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS, 1, &block));
        let out = run(&input, 3);
        let frames = frames(&out);
        let payload = &frames[0].3;
        assert_eq!(
            decode(std::slice::from_ref(payload))[0],
            [
                (b":authority".to_vec(), b"127.0.0.1:9820".to_vec()),
                (b"authorization".to_vec(), b"Bearer secret".to_vec())
            ]
        );
        // Re-encoded as literals h2 does not index; the credential as never-indexed.
        let second = 1 + 1 + b":authority".len() + 1 + b"127.0.0.1:9820".len();
        assert_eq!((payload[0], payload[second]), (0x00, 0x10));
    }

    #[test]
    fn large_blocks_are_split_into_continuations() {
        let mut block = Vec::new();
        let big = vec![b'x'; 40_000];
        encode_literal(b"x-big", &big, &mut block);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &block));
        let out = run(&input, 4096);
        let frames = frames(&out);
        let kinds: Vec<(u8, u8)> = frames.iter().map(|f| (f.0, f.1)).collect();
        assert_eq!(
            kinds,
            [
                (HEADERS, END_STREAM),
                (CONTINUATION, 0),
                (CONTINUATION, END_HEADERS)
            ]
        );
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.3.clone()).collect();
        assert_eq!(decode(&[joined])[0], [(b"x-big".to_vec(), big)]);
    }

    #[test]
    fn broken_header_blocks_are_errors() {
        let mut fix = AuthorityFix::default();
        let mut out = Vec::new();
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &[0x83]));
        input.extend(frame(0x0, 0, 1, &[1, 2, 3]));
        assert!(fix.push(&input, &mut out).is_err(), "block interrupted by DATA");

        let mut fix = AuthorityFix::default();
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS, 1, &[0xff, 0xff])); // index out of range
        assert!(fix.push(&input, &mut Vec::new()).is_err());
    }

    /// Regression (issue 34, item 6): fluke-hpack unwrapped the integer of
    /// a dynamic table size update, so a cut-off or over-long one panicked
    /// the connection's task, before the token check.
    #[test]
    fn malformed_hpack_blocks_are_errors_not_panics() {
        let blocks: [&[u8]; 9] = [
            &[0x3f],                               // size update, integer cut off
            &[0x3f, 0xff],                         // ... after a continuation octet
            &[0x3f, 0xff, 0xff, 0xff, 0xff, 0x0f], // ... six octets long
            &[0x82, 0x20],                         // size update after a field
            &[0xff, 0x80],                         // index, integer cut off
            &[0x00, 0x05, b'a'],                   // name runs past the block
            &[0x40, 0x01, b'a', 0x7f],             // value length cut off
            &[0x44],                               // value missing
            &[0x10, 0x81],                         // Huffman name runs past the block
        ];
        for block in blocks {
            assert!(check_block(block).is_err(), "{block:02x?}");
            let mut input = PREFACE.to_vec();
            input.extend(frame(HEADERS, END_HEADERS, 1, block));
            let pushed = std::panic::catch_unwind(|| AuthorityFix::default().push(&input, &mut Vec::new()));
            assert!(matches!(pushed, Ok(Err(_))), "{block:02x?}");
        }
        // Size updates at the start, and integers of the longest length, pass.
        assert!(check_block(&[0x20, 0x3f, 0xe1, 0x1f, 0x82]).is_ok());
        assert!(check_block(&[0xff, 0x80, 0x80, 0x80, 0x01]).is_ok());
        assert!(check_block(&[0xff, 0x80, 0x80, 0x80, 0x80, 0x01]).is_err());
        assert!(check_block(&[]).is_ok());
    }
}
