// `observers`: who observes what, per connection (the observationInfo of Cocoa's KVO), for people and tests
// (Protocol/methods.md#observers).
import ObjectGraph
import WireProtocol

extension Dispatcher {
    func observers(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["path"], method: "observers")
        try params.rejectUnknown()
        var filter: String?
        switch params["path"] {
        case nil, .null?: filter = nil
        case .string(let text)?: filter = try KeyPath(parsing: text).description
        default: throw RPCError.badParams("observers: 'path' must be a string")
        }
        let connections = self.context.sessions.all
        self.writeResult { buffer in
            buffer.append(contentsOf: #"{"connections":["#.utf8)
            var firstConnection = true
            for peer in connections {
                let subscriptions = peer.subscriptions.filter { filter == nil || $0.keyPath.description == filter }
                if filter != nil && subscriptions.isEmpty { continue }
                if !firstConnection { buffer.append(UInt8(ascii: ",")) }
                firstConnection = false
                buffer.append(contentsOf: #"{"connection":"#.utf8)
                JSONWriter.appendInt(Int64(peer.id), to: &buffer)
                buffer.append(contentsOf: #","remote":"#.utf8)
                JSONWriter.appendString(peer.remoteAddress, to: &buffer)
                if let name = peer.clientName {
                    buffer.append(contentsOf: #","client":"#.utf8)
                    JSONWriter.appendString(name, to: &buffer)
                }
                if peer === session { buffer.append(contentsOf: #","self":true"#.utf8) }
                buffer.append(contentsOf: #","subscriptions":["#.utf8)
                for (index, subscription) in subscriptions.enumerated() {
                    if index > 0 { buffer.append(UInt8(ascii: ",")) }
                    subscription.appendDescription(to: &buffer)
                }
                buffer.append(contentsOf: "]}".utf8)
            }
            buffer.append(contentsOf: "]}".utf8)
        }
    }
}

extension Subscription {
    /// `{"subscription":ID,"path":P,"options":[...],"context":C?}`
    func appendDescription(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: #"{"subscription":"#.utf8)
        JSONWriter.appendInt(Int64(self.id), to: &buffer)
        buffer.append(contentsOf: #","path":"#.utf8)
        JSONWriter.appendString(self.path, to: &buffer)
        buffer.append(contentsOf: #","options":["#.utf8)
        let names: [(ObservationOptions, String)] = [(.new, "new"), (.old, "old"), (.initial, "initial"), (.prior, "prior")]
        var first = true
        for (option, name) in names where self.options.contains(option) {
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.appendString(name, to: &buffer)
        }
        buffer.append(UInt8(ascii: "]"))
        if let context = self.context {
            buffer.append(contentsOf: #","context":"#.utf8)
            JSONWriter.append(context, to: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }
}
