// TLS on a libuv stream: the TLS module's session (OpenSSL over the caller's buffers) driven by the stream's reads and
// writes on the loop's thread. Ciphertext the stream reads goes in, plaintext comes out to the owner (the socket
// transport, or the HTTP server of the metrics and inspector ports); plaintext the owner writes goes out as
// ciphertext through the stream's usual write path, so libuv's write queue and kvod's output limits see the bytes
// that really wait (within a flush, records are encrypted in batches and written after each: DeferredTLSWrites,
// below). A connection gets a layer only when its first byte is a TLS handshake record (0x16): plaintext connections
// never reach this file. OpenSSL's record buffers are made and given back for each record, except on a busy
// connection, which keeps them (TLSBufferKeeper, below).
import TLS
import UVLoop

/// A stream's TLS. Loop-owned; owned by the stream's owner.
@MainActor
final class TLSLayer {
    let session: TLSSession
    fileprivate let stream: TCPStream
    /// Plaintext written before the handshake finished, sent once it has.
    private var held: [UInt8] = []
    /// Called once, when the handshake finishes, before any plaintext is delivered.
    var onEstablished: (@MainActor () -> Void)?
    private var announced = false
    /// Told of the connection's first use since its last sweep: it decides whether the session keeps its buffers.
    private let buffers: TLSBufferKeeper
    /// Whether the keeper watches this layer (it was used since the keeper last let it go).
    fileprivate var isWatched = false
    /// Reads and writes since the keeper's last sweep (wrapping: only compared with a small threshold).
    fileprivate var usesSinceSweep: UInt32 = 0
    /// Ciphertext encrypted in a flush's batch and not yet handed to the stream (DeferredTLSWrites).
    @exclusivity(unchecked) fileprivate(set) var deferredBytes = 0

    /// A server-side layer for `stream` with `context` (the context current when the connection arrived), whose
    /// record buffers `buffers` lets it keep while it is busy.
    init(context: TLSContext, stream: TCPStream, buffers: TLSBufferKeeper) throws(TLSError) {
        self.session = try TLSSession(context: context, isServer: true)
        self.stream = stream
        self.buffers = buffers
    }

    /// Counts a read or a write for the keeper.
    @inline(__always)
    private func noteUse() {
        self.usesSinceSweep &+= 1
        if !self.isWatched { self.buffers.watch(self) }
    }

    /// The first byte of a TLS handshake record (a ClientHello's): never the first byte of a JSON-RPC line or an
    /// HTTP request.
    static let handshakeRecordByte: UInt8 = 0x16

    var isEstablished: Bool { self.session.isEstablished }

    /// Feeds ciphertext the stream read; plaintext goes to `deliver`. Returns the error when the peer broke TLS (the
    /// alert telling it so is already written), nil otherwise.
    func receive(_ ciphertext: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) -> TLSError? {
        var failure: TLSError?
        self.noteUse()
        do {
            try self.session.receive(ciphertext, scratch: TLSScratch.plaintext) { plaintext in
                self.announceIfEstablished()
                deliver(plaintext)
            }
        } catch {
            failure = error
        }
        self.announceIfEstablished()
        self.flush()
        return failure
    }

    private func announceIfEstablished() {
        guard !self.announced, self.session.isEstablished else { return }
        self.announced = true
        self.onEstablished?()
        if !self.held.isEmpty {
            let held = self.held
            self.held = []
            held.withUnsafeBytes { self.write($0) }
        }
    }

    /// Sends plaintext (held until the handshake finished). A failure to encrypt ends the stream through its
    /// `onEnd`, as a failed write does.
    func write(_ plaintext: UnsafeRawBufferPointer) {
        guard self.session.isEstablished else {
            if !self.session.isClosed { self.held.append(contentsOf: plaintext) }
            return
        }
        self.noteUse()
        do {
            let deferred = TLSScratch.deferred
            if deferred.isDeferring && plaintext.count <= DeferredTLSWrites.largestPlaintext {
                try deferred.deferWrite(plaintext, through: self)
            } else {
                deferred.writeDeferred()
                try TLSScratch.send(plaintext, through: self.session) { _ = self.stream.write($0) }
            }
        } catch {
            self.stream.close()
        }
    }

    /// Sends plaintext (see `write(_:)` for the raw-buffer version).
    func write(_ plaintext: [UInt8]) {
        plaintext.withUnsafeBytes { self.write($0) }
    }

    /// Sends our close_notify; nothing more is sent afterwards.
    func close() {
        self.held = []
        self.session.close()
        self.flush()
    }

    /// Writes whatever ciphertext OpenSSL produced (handshake messages, alerts, close_notify), behind any records a
    /// flush's batch still holds.
    private func flush() {
        guard self.session.hasOutput else { return }
        TLSScratch.deferred.writeDeferred()
        self.session.drainOutput { _ = self.stream.write($0) }
    }
}

/// The loop's TLS scratch space, shared by every TLS stream on its thread (the loop runs one connection's TLS at a
/// time): kvod's own connections (TLSLayer) and the ones it opens (ClientTLSStream).
@MainActor
enum TLSScratch {
    /// Plaintext out of OpenSSL, for `TLSSession.receive`.
    static let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// Ciphertext into a stream, one write per flush, lent to a session for one `send`.
    private static let ciphertext = UnsafeMutableRawBufferPointer.allocate(
        byteCount: TLSSession.scratchBytes, alignment: 16)
    private static var ciphertextLent = false

    /// The records a flush defers (DeferredTLSWrites).
    static let deferred = DeferredTLSWrites()

    /// Encrypts `plaintext` with `session` into the lent ciphertext scratch and hands it to `sink`. A send made while
    /// the scratch is lent (from inside a stream write's failure, which may close connections) collects in a buffer of
    /// the session's own.
    static func send(
        _ plaintext: UnsafeRawBufferPointer, through session: TLSSession, sink: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) {
        let lends = !Self.ciphertextLent
        Self.ciphertextLent = true
        defer { if lends { Self.ciphertextLent = false } }
        try session.send(plaintext, scratch: lends ? Self.ciphertext : nil, sink: sink)
    }
}

/// While the loop hands every session's output over (SessionContext.flushAll), each TLS connection's record is
/// encrypted into one arena and handed to its stream only after up to `batchRecords` of them: OpenSSL's code runs for
/// the records in a row, then the kernel's write path for their writes, and neither evicts the other from the
/// instruction cache at every record (docs/PERFORMANCE.md#tls: what TLS adds per notification at fan-out 100 falls
/// by a tenth, most of it in the kernel). Order is kept: the records go out in the order they were encrypted, and any
/// other write to a TLS stream (handshake output, alerts, close_notify, a record too large to defer) first writes
/// every deferred record. Loop-owned, one per process (`TLSScratch.deferred`).
///
/// `@exclusivity(unchecked)`, like the other hot loop-owned fields (ARCHITECTURE.md#decisions): only the loop's thread
/// reads and writes them, each access ending before the next begins; `writeDeferred` re-enters only through a
/// stream's write, between two accesses.
@MainActor
final class DeferredTLSWrites {
    /// Whether records are deferred (inside `deferringWrites`).
    @exclusivity(unchecked) private(set) var isDeferring = false
    /// The deferred records, in order: their layer and their bytes in the arena; `next` is the first not written.
    @exclusivity(unchecked) private var records: [(layer: TLSLayer, bytes: UnsafeRawBufferPointer)] = []
    @exclusivity(unchecked) private var next = 0
    @exclusivity(unchecked) private var arenaUsed = 0
    /// Room for a batch of fan-out records, and always for one lent scratch (a deferred send needs one).
    private let arena = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
    /// Records per batch: enough to keep the two code paths apart, few enough that a batch's last record waits for
    /// the others' encryption only some tens of µs.
    static let batchRecords = 32
    /// The largest plaintext a deferred write takes (one `SSL_write` chunk, one hand-over to the sink).
    static let largestPlaintext = 16 << 10

    nonisolated init() {}

    /// Runs `body` with TLS records deferred, then writes them all.
    func deferringWrites(_ body: () -> Void) {
        self.isDeferring = true
        body()
        self.isDeferring = false
        self.writeDeferred()
    }

    /// Encrypts `plaintext` for `layer` into the arena and defers its write. Only while `isDeferring`, and for at
    /// most `largestPlaintext` bytes (larger output is sent at once, after `writeDeferred`).
    func deferWrite(_ plaintext: UnsafeRawBufferPointer, through layer: TLSLayer) throws(TLSError) {
        if self.records.count &- self.next >= Self.batchRecords
            || self.arena.count &- self.arenaUsed < TLSSession.scratchBytes
        {
            self.writeDeferred()
        }
        let region = UnsafeMutableRawBufferPointer(rebasing: self.arena[self.arenaUsed...])
        try layer.session.send(plaintext, scratch: region) { bytes in
            guard bytes.baseAddress == UnsafeRawPointer(region.baseAddress) else {
                // Not in the lent region (the session's sink held earlier output in a buffer of its own, freed after
                // this call): written now, behind what is deferred.
                self.writeDeferred()
                _ = layer.stream.write(bytes)
                return
            }
            self.records.append((layer, bytes))
            self.arenaUsed &+= bytes.count
            layer.deferredBytes &+= bytes.count
        }
    }

    /// Writes every deferred record, in order. Safe to re-enter (a stream's write failure closes its connection,
    /// which may write): the inner call writes the rest, and the outer one finds nothing left.
    @inline(__always)
    func writeDeferred() {
        if !self.records.isEmpty { self.writeAll() }
    }

    private func writeAll() {
        while self.next < self.records.count {
            let (layer, bytes) = self.records[self.next]
            self.next &+= 1
            layer.deferredBytes &-= bytes.count
            _ = layer.stream.write(bytes)
        }
        self.records.removeAll(keepingCapacity: true)
        self.next = 0
        self.arenaUsed = 0
    }
}

/// Decides, once a second, which TLS connections keep OpenSSL's record buffers (a read and a write buffer, about
/// 33 KiB) between records. By default a session makes them for each record and gives them back after it, a malloc and
/// a free per record (SSL_MODE_RELEASE_BUFFERS), so an idle connection holds none. A connection that read or wrote at
/// least `busyUses` times since the last sweep keeps them until a sweep finds it below that again: 36 instructions
/// less per notification at fan-out 100, 2,400 less per set and notification at fan-out 1 (docs/PERFORMANCE.md#tls).
/// So only connections busy enough for that to count hold memory while they are busy, and none holds any once idle.
/// The owner of the layers sweeps it from a timer it already has; a sweep costs in proportion to the connections used
/// since the last one. Loop-owned.
@MainActor
final class TLSBufferKeeper {
    /// The layers used since the last sweep, and those keeping buffers.
    private var watched: [TLSLayer] = []
    /// How many of them keep buffers.
    private(set) var keeping = 0

    /// The reads and writes between two sweeps (a second apart) that make a connection keep its buffers.
    static let busyUses: UInt32 = 100

    init() {}

    /// Starts watching `layer` (used for the first time since the keeper last let it go).
    fileprivate func watch(_ layer: TLSLayer) {
        layer.isWatched = true
        self.watched.append(layer)
    }

    /// Lets each busy connection keep its buffers and has each other give them back; forgets the idle and the
    /// closed ones.
    func sweep() {
        var keeping = 0
        self.watched.removeAll { layer in
            let uses = layer.usesSinceSweep
            layer.usesSinceSweep = 0
            let busy = uses >= Self.busyUses && !layer.stream.isClosing
            layer.session.keepsBuffers = busy
            if busy {
                keeping += 1
                return false
            }
            if uses > 0 && !layer.stream.isClosing { return false }  // used lightly: still watched
            layer.isWatched = false
            return true
        }
        self.keeping = keeping
    }

    /// Forgets every layer (when their owner stops).
    func forgetAll() {
        for layer in self.watched { layer.isWatched = false }
        self.watched.removeAll()
        self.keeping = 0
    }
}
