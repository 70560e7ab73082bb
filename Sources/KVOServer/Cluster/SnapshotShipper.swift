// The leader's side of a follower's bootstrap (docs/SCALING.md#bootstrap): a snapshot of the graph at the current seq,
// written as base64 text by a forked child as the background snapshots are (SnapshotProcess), then sent on the
// follower's replication session as lines `{snapshotChunk, offset, total, seq, term}` of 1 MiB of that text (offset and
// total count snapshot bytes), one chunk read from the file per loop turn straight into the line and only while the
// session has less than `maxPendingBytes` queued: the loop neither encodes the graph nor base64, and never holds more
// than a few MiB for a follower. The backlog keeps every record after the snapshot's seq until the shipment ends
// (ReplicationSource.trim); then ReplicationSource streams them and the session is a replica.
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ObjectGraph
import Persistence
import UVLoop
import WireProtocol
import SystemCall

/// The snapshots being prepared and sent to followers. Loop-owned.
@MainActor
final class SnapshotShipper {
    /// Base64 characters per line: 1 MiB, 768 KiB of snapshot (a multiple of 4, so each chunk decodes alone).
    static let chunkCharacters = 1 << 20
    /// A session gets its next chunk only when less than this is queued for it.
    static let maxPendingBytes = 2 << 20

    /// One follower's bootstrap.
    private final class Shipment {
        let session: Session
        let seq: UInt64
        /// The child writing the snapshot; nil once it is done.
        var process: SnapshotProcess?
        /// The snapshot's base64 file, open for reading (already unlinked); -1 before the child is done.
        var descriptor: Int32 = -1
        /// Characters of the file sent, and its length.
        var offset = 0
        var total = 0
        /// The snapshot's length in bytes (what the lines' `offset` and `total` count).
        var snapshotBytes = 0
        let startedAt: UInt64
        /// Where the child puts the finished file (`snapshot-follower-<pid>.tmp`, which a start removes if left).
        let path: String

        init(session: Session, seq: UInt64, process: SnapshotProcess, startedAt: UInt64, path: String) {
            self.session = session
            self.seq = seq
            self.process = process
            self.startedAt = startedAt
            self.path = path
        }
    }

    private let graph: Graph
    private let status: ClusterStatus
    /// Snapshots started for followers, which names their files.
    private var started = 0
    private let loop: EventLoop
    private let logger: Logger
    /// Where the children write their files (the data directory, whose start removes leftovers).
    private let directory: String
    private var shipments: [Shipment] = []
    /// Polls the children every 10 ms while one runs.
    private var pollTimer: LoopTimer?
    /// Called when a session has its whole snapshot queued, with the snapshot's seq: stream the records after it.
    var onShipped: ((Session, UInt64) -> Void)?
    /// Snapshots sent whole since start (metrics).
    private(set) var shippedCount = 0

    /// The CPUs the children may run on (`--snapshot-cpus`); empty: those of kvod.
    private let cpus: [Int]

    init(graph: Graph, status: ClusterStatus, loop: EventLoop, logger: Logger, directory: String, cpus: [Int] = []) {
        self.graph = graph
        self.status = status
        self.loop = loop
        self.logger = logger
        self.directory = directory
        self.cpus = cpus
    }

    /// Followers being bootstrapped.
    var count: Int { self.shipments.count }

    /// The lowest snapshot seq in flight: the backlog keeps every record after it.
    var lowestSeq: UInt64? { self.shipments.lazy.map(\.seq).min() }

    /// Starts a bootstrap of `session` at the graph's current seq: forks the child that writes the snapshot. When
    /// the fork fails the session is closed (the follower asks again).
    func start(_ session: Session) {
        let graph = self.graph
        let seq = graph.seq
        self.loop.updateTime()
        let startedAt = self.loop.nowMilliseconds
        let process: SnapshotProcess
        self.started += 1
        let path = "\(self.directory)/snapshot-follower-\(self.started).tmp"
        // No journal roll and nothing made redundant: the child only writes the file and puts it at `path`.
        let plan = SnapshotProcess.Plan(directory: self.directory, rolled: [], target: path, covered: [])
        do {
            process = try SnapshotProcess.start(files: plan, seq: seq, cpus: self.cpus) {
                [BinarySnapshotCodec.encode(graph.makeSnapshot()).withUnsafeBytes { Base64.encodedBytes($0) }]
            }
        } catch {
            self.logger.warning(
                "cannot start a snapshot for a follower",
                metadata: ["connection.id": "\(session.id)", "error": "\(error)"])
            session.close(.ioError)
            return
        }
        self.shipments.append(Shipment(session: session, seq: seq, process: process, startedAt: startedAt, path: path))
        self.logger.info(
            "snapshot for a follower started",
            metadata: ["connection.id": "\(session.id)", "seq": "\(seq)", "snapshot.pid": "\(process.pid)"])
        if self.pollTimer == nil {
            do {
                let timer = try LoopTimer(loop: self.loop)
                try timer.start(afterMilliseconds: 10, repeatMilliseconds: 10) { [unowned self] in self.pollChildren() }
                self.pollTimer = timer
            } catch {
                self.logger.warning("cannot watch the follower's snapshot process", metadata: ["error": "\(error)"])
                self.cancel(self.shipments.removeLast())
                session.close(.ioError)
            }
        }
    }

    /// Every loop turn, before the output is flushed: one chunk for each shipment whose session has room.
    func pump() {
        guard !self.shipments.isEmpty else { return }
        var index = 0
        while index < self.shipments.count {
            let shipment = self.shipments[index]
            if shipment.session.closeReason != nil {
                self.cancel(self.shipments.remove(at: index))
                continue
            }
            guard shipment.descriptor >= 0, shipment.session.pendingOutputBytes < Self.maxPendingBytes else {
                index += 1
                continue
            }
            do {
                try self.sendChunk(of: shipment)
            } catch {
                self.logger.warning(
                    "cannot read the follower's snapshot", metadata: ["connection.id": "\(shipment.session.id)",
                        "error": "\(error)"])
                self.cancel(self.shipments.remove(at: index))
                shipment.session.close(.ioError)
                continue
            }
            guard shipment.offset == shipment.total else {
                index += 1
                continue
            }
            self.shipments.remove(at: index)
            close(shipment.descriptor)
            shipment.descriptor = -1
            self.shippedCount += 1
            self.loop.updateTime()
            self.logger.info(
                "snapshot sent to a follower",
                metadata: ["connection.id": "\(shipment.session.id)", "seq": "\(shipment.seq)",
                    "bytes": "\(shipment.snapshotBytes)",
                    "duration.ms": "\(self.loop.nowMilliseconds &- shipment.startedAt)"])
            self.onShipped?(shipment.session, shipment.seq)
        }
    }

    /// Sends `line` (a heartbeat) on every session being bootstrapped, so that its link stays alive while the child
    /// writes a large snapshot.
    func heartbeat(_ line: [UInt8]) {
        for shipment in self.shipments where shipment.session.closeReason == nil {
            shipment.session.enqueue(bytes: line)
        }
    }

    /// Ends every bootstrap and closes its session (this member no longer leads).
    func cancelAll(closing reason: CloseReason) {
        let shipments = self.shipments
        self.shipments.removeAll()
        for shipment in shipments {
            self.cancel(shipment)
            shipment.session.close(reason)
        }
        self.stopPollingIfIdle()
    }

    // MARK: - Children and chunks

    private func pollChildren() {
        var index = 0
        while index < self.shipments.count {
            let shipment = self.shipments[index]
            if shipment.session.closeReason != nil {
                self.cancel(self.shipments.remove(at: index))
                continue
            }
            guard let process = shipment.process else {
                index += 1
                continue
            }
            switch process.poll() {
            case .running:
                index += 1
            case .succeeded:
                shipment.process = nil
                do {
                    try self.open(shipment, path: shipment.path)
                    index += 1
                } catch {
                    self.logger.warning("cannot open the follower's snapshot", metadata: ["error": "\(error)"])
                    self.shipments.remove(at: index)
                    shipment.session.close(.ioError)
                }
            case .failed(let reason), .journalFailed(let reason):
                shipment.process = nil
                process.discard()
                self.logger.warning(
                    "snapshot for a follower failed",
                    metadata: ["connection.id": "\(shipment.session.id)", "error": "\(reason)"])
                self.shipments.remove(at: index)
                shipment.session.close(.ioError)
            }
        }
        self.stopPollingIfIdle()
    }

    private func stopPollingIfIdle() {
        guard !self.shipments.contains(where: { $0.process != nil }) else { return }
        self.pollTimer?.close()
        self.pollTimer = nil
    }

    /// Opens the finished snapshot and unlinks it: the descriptor keeps it readable, and nothing is left behind.
    private func open(_ shipment: Shipment, path: String) throws(PersistenceError) {
        defer { unlink(path) }
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw PersistenceError("open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        var tail: (UInt8, UInt8) = (0, 0)
        guard fstat(descriptor, &info) == 0, info.st_size >= 4, info.st_size % 4 == 0,
            pread(descriptor, &tail, 2, info.st_size - 2) == 2
        else {
            close(descriptor)
            throw PersistenceError("\(path): not the base64 of a snapshot")
        }
        shipment.descriptor = descriptor
        shipment.total = Int(info.st_size)
        let padding = (tail.0 == UInt8(ascii: "=") ? 1 : 0) + (tail.1 == UInt8(ascii: "=") ? 1 : 0)
        shipment.snapshotBytes = shipment.total / 4 * 3 - padding
    }

    /// Reads the next chunk into its line and queues the line.
    private func sendChunk(of shipment: Shipment) throws(PersistenceError) {
        let length = min(Self.chunkCharacters, shipment.total - shipment.offset)
        let (prefix, suffix) = ReplicationMessage.snapshotChunkAffixes(
            term: self.status.term, seq: shipment.seq, offset: Int64(shipment.offset / 4 * 3),
            total: Int64(shipment.snapshotBytes))
        var failure: Int32 = 0
        let line = [UInt8](unsafeUninitializedCapacity: prefix.count + length + suffix.count) { buffer, count in
            guard let base = UnsafeMutableRawPointer(buffer.baseAddress) else { return }
            // The prefix and suffix are never empty, so their base addresses exist.
            prefix.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            let got = SystemCall.readFully(
                shipment.descriptor, into: UnsafeMutableRawBufferPointer(start: base + prefix.count, count: length),
                at: shipment.offset)
            guard got == length else {
                failure = got < 0 ? Int32(-got) : EIO
                return
            }
            let end = base + prefix.count + length
            suffix.withUnsafeBytes { end.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            count = prefix.count + length + suffix.count
        }
        guard failure == 0, line.count > 0 else {
            throw PersistenceError("reading the follower's snapshot: \(String(cString: strerror(failure)))")
        }
        shipment.session.enqueue(bytes: line)
        shipment.offset += length
    }

    /// Stops a shipment: kills and reaps its child, or closes its file.
    private func cancel(_ shipment: Shipment) {
        if let process = shipment.process {
            kill(process.pid, SIGKILL)
            _ = process.wait()
            process.discard()
            unlink(shipment.path)  // the child may have put its file in place just before the kill
            shipment.process = nil
        }
        if shipment.descriptor >= 0 {
            close(shipment.descriptor)
            shipment.descriptor = -1
        }
    }
}
