// The one seam where thrown errors become JSON-RPC error objects (Protocol/errors.md). Handlers throw; the
// dispatcher converts; anything that is not convertible is an internal error (-32603) and is logged.
import ObjectGraph
import ValueCoding
import WireProtocol

/// An error that knows its JSON-RPC shape.
protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError: RPCErrorConvertible {
    var rpcError: RPCError { self }
}

extension RPCError {
    /// -32602 with a message saying which parameter is wrong.
    static func badParams(_ message: String) -> RPCError {
        RPCError(.invalidParams, message)
    }
}

extension GraphError: RPCErrorConvertible {
    var rpcError: RPCError {
        let message = self.description
        var data = JSONObject()
        if let path = self.path { data["path"] = .string(path) }
        switch self {
        case .invalidPath(_, let reason):
            data["reason"] = .string(reason)
            return RPCError(.invalidParams, message, data: .object(data))
        case .undefinedKey:
            return RPCError(.undefinedKey, message, data: .object(data))
        case .typeMismatch(_, let reason):
            data["reason"] = .string(reason)
            return RPCError(.typeMismatch, message, data: .object(data))
        case .validationFailed(_, let reason):
            data["reason"] = .string(reason)
            return RPCError(.validationFailed, message, data: .object(data))
        case .nullNotAllowed:
            return RPCError(.nullNotAllowed, message, data: .object(data))
        case .readOnly:
            return RPCError(.readOnlyKey, message, data: .object(data))
        case .indexOutOfRange(_, let index, let count):
            data["index"] = .int(Int64(index))
            data["count"] = .int(Int64(count))
            return RPCError(.indexOutOfRange, message, data: .object(data))
        case .unknownObservation(let id):
            data["subscription"] = .int(Int64(id))
            return RPCError(.unknownSubscription, "unknown subscription \(id)", data: .object(data))
        case .invalidArgument(_, let reason):
            data["reason"] = .string(reason)
            return RPCError(.invalidParams, message, data: .object(data))
        case .tooDeep(_, let limit):
            data["limit"] = .int(Int64(limit))
            return RPCError(.limitExceeded, message, data: .object(data))
        case .ttlNotAllowed:
            data["reason"] = .string("only a key that may be null can expire")
            return RPCError(.invalidParams, message, data: .object(data))
        case .conditionFailed(_, let value, let modSeq):
            data["value"] = value.jsonValue
            data["modSeq"] = modSeq.map { .int(Int64($0)) } ?? .null
            return RPCError(.preconditionFailed, message, data: .object(data))
        }
    }
}

extension TransactionError: RPCErrorConvertible {
    /// The failing op's error, with `data.op` its 0-based index.
    var rpcError: RPCError {
        var error = self.error.rpcError
        var data: JSONObject
        if case .object(let object)? = error.data { data = object } else { data = JSONObject() }
        data["op"] = .int(Int64(self.op))
        error.data = .object(data)
        error.message = "op \(self.op): \(error.message)"
        return error
    }
}
