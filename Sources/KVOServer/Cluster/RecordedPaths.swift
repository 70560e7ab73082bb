// Cluster-wide recorders (docs/SCALING.md#clients): every member records the history of every key path subscribed
// on any member, so a client that resumes with `since` on another member than the one it left gets the changes it
// missed (Protocol/README.md#resuming). A member whose subscription starts a recorder announces the path: the leader
// puts `{"term":T,"seq":N,"record":PATH}` into the replication stream at its seq N, in order with the records; a
// follower asks its leader with a `record {path}` notification on the link (and again for all its paths each time a
// link is established), and the leader, if it did not record the path yet, starts and announces it. A follower that
// applies a record line starts recording the path from the seq it has applied then: its own recorder, exact from
// that point. A catch-up starts with a record line per path the leader records. Recorders started so have no
// subscriber: they count against the history's idle-recorder limit (SubscriptionHistory), which bounds them.
import ObjectGraph
import WireProtocol

extension ClusterNode {
    /// Wires the history's recorder announcements to the cluster (at the node's start).
    func recordClusterWide() {
        let history = self.core.context.subscriptions.history
        self.source.recordedPaths = { [unowned history] in history.recordedPaths }
        history.onRecorderStarted = { [unowned self] keyPath in
            switch self.status.role {
            case .leader: self.source.announceRecording(keyPath)
            case .follower: self.link?.requestRecording([keyPath.description])
            case .candidate: break  // announced when a link is established or, as a leader, in each catch-up
            }
        }
    }

    /// Once the leader answered `replicate`: asks it to record every path this member records (some may have
    /// started while there was no link).
    func requestRecordingOfRecordedPaths() {
        let paths = self.core.context.subscriptions.history.recordedPaths
        self.link?.requestRecording(paths.map(\.description))
    }

    /// A record line from the leader: this member starts recording `path` now, unless it does already (or cannot
    /// observe it: it then resyncs its clients as without a cluster). A path that does not parse ends the link.
    func recordReplicated(_ path: String) throws {
        let keyPath: KeyPath
        do {
            keyPath = try KeyPath(parsing: path)
        } catch {
            throw ReplicationError(description: "a record line with an invalid path: \(error)")
        }
        self.core.context.subscriptions.history.record(keyPath)
    }
}
