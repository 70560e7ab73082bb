// `hello` and `ping`: the methods that touch no state (Protocol/methods.md#hello, #ping). `hello` also presents
// the token when access control is on (Dispatcher+Access.swift).
import WireProtocol

extension Dispatcher {
    /// The protocol version this server speaks.
    static let protocolVersion = 1

    func hello(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["client", "token"], method: "hello")
        try params.rejectUnknown()
        switch params["client"] {
        case .string(let name)?: session.clientName = name
        case nil, .null?: break
        default: throw RPCError.badParams("hello: 'client' must be a string")
        }
        let token: String?
        switch params["token"] {
        case .string(let text)?: token = text
        case nil, .null?: token = nil
        default: throw RPCError.badParams("hello: 'token' must be a string")
        }
        try self.authenticate(token: token, on: session)
        let access = self.context.accessControl.isEnabled ? session.access : nil
        self.writeResult {
            $0.append(contentsOf: #"{"server":"kvod","version":"#.utf8)
            JSONWriter.appendString(KVODVersion.current, to: &$0)
            $0.append(contentsOf: #","protocol":"#.utf8)
            JSONWriter.appendInt(Int64(Self.protocolVersion), to: &$0)
            if let access {
                $0.append(contentsOf: #","access":"#.utf8)
                JSONWriter.appendString(access.rawValue, to: &$0)
                if let paths = session.allowedPaths {
                    $0.append(contentsOf: #","paths":["#.utf8)
                    for (index, pattern) in paths.enumerated() {
                        if index > 0 { $0.append(UInt8(ascii: ",")) }
                        JSONWriter.appendString(pattern.description, to: &$0)
                    }
                    $0.append(UInt8(ascii: "]"))
                }
            }
            if let cluster = self.context.cluster { self.appendClusterMembers(cluster, to: &$0) }
            $0.append(UInt8(ascii: "}"))
        }
    }

    func ping(_ request: RPCRequest, on session: Session) throws {
        try Params(request.params, names: [], method: "ping").rejectUnknown()
        self.writeResult { $0.append(contentsOf: #""pong""#.utf8) }
    }
}

/// The version of kvod, reported by `hello` and `--version`.
public enum KVODVersion {
    public static let current = "0.1.0"
}
