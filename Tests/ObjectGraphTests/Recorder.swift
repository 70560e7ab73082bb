// A test observer that records every notification it gets, in order, across observations.
import ObjectGraph

/// Records notifications from any number of observations into one ordered log.
final class Recorder {
    private(set) var log: [Change] = []
    private(set) var names: [ObservationID: String] = [:]

    /// Observes `path` and records notifications under `name`; returns the id.
    @discardableResult
    func observe(
        _ graph: Graph, _ path: String, _ options: ObservationOptions, name: String? = nil
    ) throws -> ObservationID {
        let (id, initial) = try graph.addObservation(KeyPath(parsing: path), options: options) { [unowned self] in
            self.log.append($0)
        }
        self.names[id] = name ?? path
        if let initial { self.log.append(initial) }
        return id
    }

    /// The log as "name:prior" / "name:after" / "name:initial" events.
    var events: [String] {
        self.log.map { change in
            let name = self.names[change.observation] ?? "?"
            return "\(name):\(change.isInitial ? "initial" : change.isPrior ? "prior" : "after")"
        }
    }

    func clear() { self.log.removeAll() }
}
