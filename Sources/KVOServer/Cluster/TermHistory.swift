// The term history of a member's journal (docs/SCALING.md#rejoin): the (term, firstSeq) pairs saying which leader's
// term wrote each seq, as Raft keeps a term per log entry. Two members whose histories give the same term at seq S
// have the same records up to S (one term has one leader, and followers take its records in order), so a follower
// resumes from S only when the leader's history agrees there; otherwise it bootstraps from the leader's snapshot,
// which discards a tail the new leader does not have. Members publish the term of their last record with their
// applied seq, and the election prefers (term, seq). Kept in `DATA/cluster-terms`, one `term firstSeq` line per
// entry, rewritten (atomically, fsynced) when a new term writes its first record, which happens once per election.
// A bootstrap writes the leader's history to `cluster-terms.next` with the snapshot's seq; the next start adopts it
// only when the snapshot it loads is at that seq (the install really happened).
#if canImport(Glibc)
import Glibc
#endif
import Persistence

/// A member's term history. Loop-owned.
@MainActor
final class TermHistory {
    /// (term, firstSeq), firstSeq ascending; seqs before the first entry have term 0 (written outside a cluster).
    private(set) var entries: [(term: UInt64, firstSeq: UInt64)]
    private let path: String?
    /// On a follower: the leader's history from its `replicate` result, for a snapshot bootstrap.
    var leaderEntries: [(term: UInt64, firstSeq: UInt64)]?

    /// Loads `directory/cluster-terms` (nil: in memory only). A pending `cluster-terms.next` is adopted when
    /// `snapshotSeq` (the seq of the snapshot the member started from) is the one it was written for.
    init(directory: String?, snapshotSeq: UInt64) {
        self.path = directory.map { $0 + "/cluster-terms" }
        self.entries = []
        guard let path = self.path else { return }
        self.entries = Self.read(path) ?? []
        if let next = Self.read(path + ".next") {
            // The first line is (the snapshot's seq, 0), the rest the leader's entries.
            if next.first?.term == snapshotSeq {
                self.entries = Array(next.dropFirst())
                self.save()
            }
            unlink(path + ".next")
        }
    }

    /// The term that wrote `seq` (0 before the first entry).
    func term(at seq: UInt64) -> UInt64 {
        var low = 0
        var high = self.entries.count
        while low < high {
            let middle = (low + high) / 2
            if self.entries[middle].firstSeq <= seq { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? 0 : self.entries[low - 1].term
    }

    /// Records that `term` wrote `seq` (the next seq): a new entry when the term changes, replacing any entry at or
    /// after `seq` (a tail written before a crash and never journaled).
    func record(term: UInt64, seq: UInt64) {
        if let last = self.entries.last, last.term == term && last.firstSeq <= seq { return }
        self.entries.removeAll { $0.firstSeq >= seq }
        self.entries.append((term, seq))
        self.save()
    }

    /// The entries as `[[term, firstSeq], …]` for the `replicate` result.
    var json: [[UInt64]] { self.entries.map { [$0.term, $0.firstSeq] } }

    /// Writes the leader's history, cut at `seq`, to be adopted at the next start if the snapshot at `seq` is in
    /// place then (a follower's bootstrap, just before it installs the snapshot and restarts).
    func prepareBootstrap(leaderEntries: [(term: UInt64, firstSeq: UInt64)], seq: UInt64) {
        guard let path = self.path else { return }
        let kept = leaderEntries.filter { $0.firstSeq <= seq }
        Self.write([(seq, 0)] + kept, to: path + ".next")
    }

    private func save() {
        guard let path = self.path else { return }
        Self.write(self.entries, to: path)
    }

    // MARK: - The file

    /// `term firstSeq` lines; nil when the file does not exist or a line is unreadable.
    private static func read(_ path: String) -> [(term: UInt64, firstSeq: UInt64)]? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        var entries: [(term: UInt64, firstSeq: UInt64)] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " ")).map { UInt64(String(decoding: $0, as: UTF8.self)) }
            guard fields.count == 2, let term = fields[0], let firstSeq = fields[1] else { return nil }
            entries.append((term, firstSeq))
        }
        return entries
    }

    /// Replaces `path` with `entries` atomically (AtomicFile; best effort: a history that cannot be written only
    /// costs a snapshot bootstrap later, since an absent history never matches a leader's).
    private static func write(_ entries: [(term: UInt64, firstSeq: UInt64)], to path: String) {
        let text = entries.map { "\($0.term) \($0.firstSeq)\n" }.joined()
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        try? AtomicFile.replace(path, with: [Array(text.utf8)], directory: directory)
    }
}
