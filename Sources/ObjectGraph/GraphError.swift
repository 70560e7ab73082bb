// The errors the engine reports. Each maps to one JSON-RPC application code in the server (Protocol/errors.md);
// the engine itself knows nothing of the wire.

/// A request the graph refused. Nothing was changed and nobody was notified.
public enum GraphError: Error, Equatable, Sendable {
    /// The key path is not well formed (empty component, bad `$id`, ...).
    case invalidPath(path: String, reason: String)
    /// The key does not exist on a typed object, or an `$id` names no live object.
    case undefinedKey(path: String)
    /// The path goes through a value that is not an object (a number, string, bool or array).
    case typeMismatch(path: String, reason: String)
    /// The value was rejected by validation.
    case validationFailed(path: String, reason: String)
    /// Null was set on a property that does not allow it.
    case nullNotAllowed(path: String)
    /// The key is computed (read-only).
    case readOnly(path: String)
    /// A collection index is out of range.
    case indexOutOfRange(path: String, index: Int, count: Int)
    /// The observation id is unknown (or already removed).
    case unknownObservation(ObservationID)
    /// A value is nested deeper than the graph accepts.
    case tooDeep(path: String, limit: Int)
    /// The arguments of a mutation do not fit together (indexes and values of different lengths, repeats).
    case invalidArgument(path: String, reason: String)
    /// A conditional write's condition did not hold; `value` and `modSeq` are the current ones.
    case conditionFailed(path: String, value: Value, modSeq: UInt64?)
    /// A set with a deadline (`expiresAt`, the wire's `ttl`) on a key that cannot hold null: a declared property
    /// that is not nullable. Expiry stores null, so only undeclared keys of open classes and nullable properties
    /// may expire. Suggested wire mapping: -32602 (invalid params, with `path` and a `reason`): the `ttl` param does
    /// not fit this key, and the request can be fixed by dropping it; 1005 (type mismatch) is about paths through
    /// non-objects and would mislead.
    case ttlNotAllowed(path: String)

    /// The key path the error is about, when it has one.
    public var path: String? {
        switch self {
        case .invalidPath(let path, _), .undefinedKey(let path), .typeMismatch(let path, _),
            .validationFailed(let path, _), .nullNotAllowed(let path), .readOnly(let path),
            .indexOutOfRange(let path, _, _), .tooDeep(let path, _), .invalidArgument(let path, _),
            .conditionFailed(let path, _, _), .ttlNotAllowed(let path):
            path
        case .unknownObservation: nil
        }
    }
}

extension GraphError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidPath(let path, let reason): "invalid key path '\(path)': \(reason)"
        case .undefinedKey(let path): "undefined key '\(path)'"
        case .typeMismatch(let path, let reason): "type mismatch at '\(path)': \(reason)"
        case .validationFailed(let path, let reason): "validation failed for '\(path)': \(reason)"
        case .nullNotAllowed(let path): "null is not allowed for '\(path)'"
        case .readOnly(let path): "'\(path)' is read-only"
        case .indexOutOfRange(let path, let index, let count):
            "index \(index) out of range for '\(path)' (count \(count))"
        case .unknownObservation(let id): "unknown observation \(id)"
        case .conditionFailed(let path, _, let modSeq):
            "precondition failed for '\(path)' (modSeq \(modSeq.map(String.init) ?? "null"))"
        case .tooDeep(let path, let limit): "value for '\(path)' is nested deeper than \(limit)"
        case .invalidArgument(let path, let reason): "invalid arguments for '\(path)': \(reason)"
        case .ttlNotAllowed(let path): "'\(path)' cannot expire: it does not accept null"
        }
    }
}
