// Writing JSON-RPC 2.0 messages: responses (result or error) and notifications from the server, requests from the
// client. Every function appends exactly one compact JSON object and never a newline: the caller frames.

/// Appends JSON-RPC 2.0 messages to a byte buffer. An `id` of nil is written as `null`, except in `appendRequest`
/// where nil means "notification" and the member is left out. Cost: O(output size), no intermediate allocations.
public enum RPCEncoder {
    /// Appends `{"jsonrpc":"2.0","id":ID,"result":…}`, where `writeResult` appends the result's JSON.
    public static func appendResult(id: JSONValue?, to bytes: inout [UInt8], _ writeResult: (inout [UInt8]) -> Void) {
        Self.appendResultPrefix(id: id, to: &bytes)
        writeResult(&bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// A response's text before its id, and between its id and its result (also written by the server's output
    /// buffer, which puts responses with integer ids straight into a connection's output).
    @inlinable public static var responseStart: StaticString { #"{"jsonrpc":"2.0","id":"# }
    @inlinable public static var resultStart: StaticString { #","result":"# }

    /// Appends `{"jsonrpc":"2.0","id":ID,"result":`: the caller appends the result and the closing `}`. `idText`:
    /// the id's bytes as the request had them (RPCRequest.idText), written instead of `id` when given.
    public static func appendResultPrefix(id: JSONValue?, idText: [UInt8]? = nil, to bytes: inout [UInt8]) {
        JSONWriter.appendLiteral(Self.responseStart, to: &bytes)
        if case .int(let number)? = id, idText == nil {
            JSONWriter.appendInt(number, to: &bytes)  // the common id, without the general writer
        } else {
            self.appendID(id, text: idText, to: &bytes)
        }
        JSONWriter.appendLiteral(Self.resultStart, to: &bytes)
    }

    /// Appends an id: its bytes as sent when given, else `id` (nil as `null`).
    private static func appendID(_ id: JSONValue?, text: [UInt8]?, to bytes: inout [UInt8]) {
        if let text { bytes.append(contentsOf: text) } else { JSONWriter.append(id ?? .null, to: &bytes) }
    }

    /// Appends `{"jsonrpc":"2.0","id":ID,"result":RESULT}`.
    public static func appendResult(id: JSONValue?, result: JSONValue, to bytes: inout [UInt8]) {
        self.appendResult(id: id, to: &bytes) { JSONWriter.append(result, to: &$0) }
    }

    /// Appends `{"jsonrpc":"2.0","id":ID,"error":{"code":C,"message":"…","data":…}}`; `data` is omitted when nil.
    /// `idText` as in `appendResultPrefix`.
    public static func appendError(id: JSONValue?, idText: [UInt8]? = nil, error: RPCError, to bytes: inout [UInt8]) {
        JSONWriter.appendLiteral(#"{"jsonrpc":"2.0","id":"#, to: &bytes)
        self.appendID(id, text: idText, to: &bytes)
        JSONWriter.appendLiteral(#","error":{"code":"#, to: &bytes)
        JSONWriter.appendInt(Int64(error.code), to: &bytes)
        JSONWriter.appendLiteral(#","message":"#, to: &bytes)
        JSONWriter.appendString(error.message, to: &bytes)
        if let data = error.data {
            JSONWriter.appendLiteral(#","data":"#, to: &bytes)
            JSONWriter.append(data, to: &bytes)
        }
        JSONWriter.appendLiteral("}}", to: &bytes)
    }

    /// Appends `{"jsonrpc":"2.0","method":"…","params":…}`, where `writeParams` appends the params' JSON (which
    /// must be an object or an array).
    public static func appendNotification(
        method: String, to bytes: inout [UInt8], _ writeParams: (inout [UInt8]) -> Void
    ) {
        JSONWriter.appendLiteral(#"{"jsonrpc":"2.0","method":"#, to: &bytes)
        JSONWriter.appendString(method, to: &bytes)
        JSONWriter.appendLiteral(#","params":"#, to: &bytes)
        writeParams(&bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends `{"jsonrpc":"2.0","method":"…","params":PARAMS}`, or without `params` when it is nil.
    public static func appendNotification(method: String, params: JSONValue?, to bytes: inout [UInt8]) {
        self.appendRequest(id: nil, method: method, params: params, to: &bytes)
    }

    /// Appends a request, `{"jsonrpc":"2.0","id":ID,"method":"…","params":PARAMS}` (client side). A nil `id` makes
    /// it a notification (no `id` member); a nil `params` leaves that member out.
    public static func appendRequest(id: JSONValue?, method: String, params: JSONValue?, to bytes: inout [UInt8]) {
        JSONWriter.appendLiteral(#"{"jsonrpc":"2.0","#, to: &bytes)
        if let id {
            JSONWriter.appendLiteral(#""id":"#, to: &bytes)
            JSONWriter.append(id, to: &bytes)
            bytes.append(UInt8(ascii: ","))
        }
        JSONWriter.appendLiteral(#""method":"#, to: &bytes)
        JSONWriter.appendString(method, to: &bytes)
        if let params {
            JSONWriter.appendLiteral(#","params":"#, to: &bytes)
            JSONWriter.append(params, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
    }
}
