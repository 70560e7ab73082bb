// The follower's side of a bootstrap (docs/SCALING.md#bootstrap): the leader's `{snapshotChunk, offset, total, seq,
// term}` lines (SnapshotShipper.swift) appended in order to a temporary file in the data directory
// (`snapshot-leader.tmp`, removed by the next start if left behind); when the last chunk is in, the file is read
// back and handed to `Server.onSnapshotReceived`, which checks it (format and checksum), installs it atomically in
// place of the snapshot and journal and restarts kvod on it. A link that ends halfway leaves the file to the next
// bootstrap, which starts again at offset 0.
#if canImport(Glibc)
import Glibc
#endif
import WireProtocol
import SystemCall

/// A snapshot being received from the leader. Loop-owned.
final class SnapshotReceiver {
    /// Bootstraps larger than this are refused (a damaged line, not a graph).
    static let maxTotalBytes = 1 << 40
    let seq: UInt64
    let total: Int
    let path: String
    private(set) var received = 0
    private var descriptor: Int32

    /// Starts a file for a snapshot of `total` bytes at `seq` in `directory`.
    init(directory: String, seq: UInt64, total: Int) throws(ReplicationError) {
        self.seq = seq
        self.total = total
        self.path = directory + "/snapshot-leader.tmp"
        self.descriptor = open(self.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard self.descriptor >= 0 else {
            throw ReplicationError(description: "cannot open \(self.path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        if self.descriptor >= 0 { close(self.descriptor) }
    }

    /// Appends one chunk, which must start where the last one ended; returns whether the snapshot is complete.
    func append(_ bytes: [UInt8], at offset: Int) throws(ReplicationError) -> Bool {
        guard offset == self.received, bytes.count <= self.total - self.received, !bytes.isEmpty else {
            throw ReplicationError(
                description: "a snapshot chunk of \(bytes.count) bytes at offset \(offset), expected offset "
                    + "\(self.received) of \(self.total)")
        }
        let failure = SystemCall.writeAll(self.descriptor, bytes)
        guard failure == 0 else {
            throw ReplicationError(description: "cannot write \(self.path): \(String(cString: strerror(failure)))")
        }
        self.received += bytes.count
        return self.received == self.total
    }

    /// The whole snapshot, read back; the temporary file is removed.
    func finish() throws(ReplicationError) -> [UInt8] {
        close(self.descriptor)
        self.descriptor = -1
        defer { unlink(self.path) }
        let descriptor = open(self.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ReplicationError(description: "cannot read \(self.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: self.total)
        let read = bytes.withUnsafeMutableBytes { SystemCall.readFully(descriptor, into: $0) }
        guard read == self.total else {
            throw ReplicationError(description: "\(self.path) is shorter than its \(self.total) bytes")
        }
        // The header names the seq (BinarySnapshotCodec.swift); the checksum is checked when it is installed.
        var headerSeq: UInt64 = 0
        if bytes.count >= 20 { for shift in 0..<8 { headerSeq |= UInt64(bytes[12 + shift]) << UInt64(shift * 8) } }
        guard headerSeq == self.seq else {
            throw ReplicationError(
                description: "the leader's snapshot is at seq \(headerSeq), announced at \(self.seq)")
        }
        return bytes
    }

    /// Stops receiving and removes the file.
    func discard() {
        if self.descriptor >= 0 { close(self.descriptor) }
        self.descriptor = -1
        unlink(self.path)
    }
}

extension ClusterNode {
    /// One `{snapshotChunk, offset, total, seq, term}` line from the leader (its term already checked): offset 0
    /// starts a new file; the last chunk installs the snapshot and restarts kvod on it (`onSnapshotReceived`).
    func receiveSnapshotChunk(_ encoded: String, offset rawOffset: Int64, total rawTotal: Int64, seq: UInt64)
        throws(ReplicationError)
    {
        guard rawOffset >= 0, rawTotal > 0, rawTotal <= SnapshotReceiver.maxTotalBytes else {
            throw ReplicationError(description: "a snapshot chunk without a valid offset and total")
        }
        guard let bytes = Base64.decode(encoded) else {
            throw ReplicationError(description: "a snapshot chunk that is not base64")
        }
        let log = self.log
        guard let directory = log.durability?.directory.path, let install = self.onSnapshotReceived
        else { throw ReplicationError(description: "the leader sent a snapshot, which this member cannot install") }
        let offset = Int(rawOffset)
        if offset == 0 {
            log.incomingSnapshot?.discard()
            log.incomingSnapshot = try SnapshotReceiver(directory: directory, seq: seq, total: Int(rawTotal))
            self.logger.notice(
                "bootstrapping from the leader's snapshot", metadata: ["seq": "\(seq)", "bytes": "\(rawTotal)"])
        }
        guard let receiver = log.incomingSnapshot, receiver.seq == seq, receiver.total == Int(rawTotal) else {
            throw ReplicationError(description: "a snapshot chunk at offset \(offset) of a snapshot not started")
        }
        guard try receiver.append(bytes, at: offset) else { return }
        log.incomingSnapshot = nil
        let snapshot = try receiver.finish()
        self.logger.notice(
            "snapshot from the leader received", metadata: ["seq": "\(seq)", "bytes": "\(snapshot.count)"])
        self.prepareTermsForBootstrap(snapshotSeq: seq)
        do {
            try install(snapshot)
        } catch {
            throw ReplicationError(description: "the leader's snapshot cannot be installed: \(error)")
        }
    }
}
