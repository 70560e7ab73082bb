// The words most strings of the protocol are made of (member names, method names, options, the version), recognized
// in the input with a word compare or two and returned as String literals, which costs neither validation nor a copy.
// Objects whose keys are all known words get their key arrays from literals too: the usual request params
// (`{"path", "value"}`) then share one immutable array instead of allocating a new one per request. Objects with
// other keys note the keys' fingerprints, so that ruling out repeated keys rarely takes a String comparison.

/// A word of the protocol, recognized by `JSONParser` in plain ASCII strings.
enum KnownWord: UInt8 {
    // Raw value 0 is left out so that a `shape` byte of 0 means "no word".
    case id = 1
    case version, set, get, seq, new, old, ops
    case path, code, ping, kind
    case value, index, error, prior, hello, since
    case method, params, result, change, insert, remove, values
    case jsonrpc, message, options, initial, context, indexes, replace
    case progress
    case subscribe
    case subscription

    /// The word as a String literal.
    @inline(__always)
    var text: String {
        switch self {
        case .id: "id"
        case .version: "2.0"
        case .set: "set"
        case .get: "get"
        case .seq: "seq"
        case .new: "new"
        case .old: "old"
        case .ops: "ops"
        case .path: "path"
        case .code: "code"
        case .ping: "ping"
        case .kind: "kind"
        case .value: "value"
        case .index: "index"
        case .error: "error"
        case .prior: "prior"
        case .hello: "hello"
        case .since: "since"
        case .method: "method"
        case .params: "params"
        case .result: "result"
        case .change: "change"
        case .insert: "insert"
        case .remove: "remove"
        case .values: "values"
        case .jsonrpc: "jsonrpc"
        case .message: "message"
        case .options: "options"
        case .initial: "initial"
        case .context: "context"
        case .indexes: "indexes"
        case .replace: "replace"
        case .progress: "progress"
        case .subscribe: "subscribe"
        case .subscription: "subscription"
        }
    }

    /// The word spelled by the `count` bytes at `pointer` (plain ASCII, followed by at least one readable byte), if
    /// any; `available` bytes are readable from `pointer`.
    @inline(__always)
    static func recognize(_ pointer: UnsafePointer<UInt8>, count: Int, available: Int) -> KnownWord? {
        guard count >= 2 && count <= 12 else { return nil }
        let low = JSONParser.word(pointer, count: min(count, 8), available: available)
        if count <= 8 {
            // Plain ASCII has no NUL bytes, so the zero-padded word alone says which text (and length) it is.
            return Self.recognize(word: low)
        }
        let high = JSONParser.word(pointer + 8, count: count - 8, available: available - 8)
        if low == JSONParser.pack("subscribe") && high == JSONParser.pack("subscribe", from: 8) { return .subscribe }
        if low == JSONParser.pack("subscription") && high == JSONParser.pack("subscription", from: 8) {
            return .subscription
        }
        return nil
    }

    /// The word of at most 8 bytes whose zero-padded little-endian word (see `JSONParser.word`) is `word`.
    static func recognize(word: UInt64) -> KnownWord? {
        switch word {
        case JSONParser.pack("id"): .id
        case JSONParser.pack("2.0"): .version
        case JSONParser.pack("set"): .set
        case JSONParser.pack("get"): .get
        case JSONParser.pack("seq"): .seq
        case JSONParser.pack("new"): .new
        case JSONParser.pack("old"): .old
        case JSONParser.pack("ops"): .ops
        case JSONParser.pack("path"): .path
        case JSONParser.pack("code"): .code
        case JSONParser.pack("ping"): .ping
        case JSONParser.pack("kind"): .kind
        case JSONParser.pack("value"): .value
        case JSONParser.pack("index"): .index
        case JSONParser.pack("error"): .error
        case JSONParser.pack("prior"): .prior
        case JSONParser.pack("hello"): .hello
        case JSONParser.pack("since"): .since
        case JSONParser.pack("method"): .method
        case JSONParser.pack("params"): .params
        case JSONParser.pack("result"): .result
        case JSONParser.pack("change"): .change
        case JSONParser.pack("insert"): .insert
        case JSONParser.pack("remove"): .remove
        case JSONParser.pack("values"): .values
        case JSONParser.pack("jsonrpc"): .jsonrpc
        case JSONParser.pack("message"): .message
        case JSONParser.pack("options"): .options
        case JSONParser.pack("initial"): .initial
        case JSONParser.pack("context"): .context
        case JSONParser.pack("indexes"): .indexes
        case JSONParser.pack("replace"): .replace
        case JSONParser.pack("progress"): .progress
        default: nil
        }
    }
}

/// The keys of an object while every one so far is a known word: their raw values, one byte each, the first key in
/// the lowest byte. Holds up to four keys.
struct KnownKeys {
    private(set) var shape: UInt32 = 0
    private(set) var count = 0

    /// The largest number of keys a shape holds.
    static var capacity: Int { 4 }

    /// Appends a key; the caller checks `count < capacity`.
    @inline(__always)
    mutating func append(_ word: KnownWord) {
        self.shape |= UInt32(word.rawValue) &<< UInt32(self.count &* 8)
        self.count &+= 1
    }

    /// The key at `position`.
    private func word(at position: Int) -> KnownWord {
        // Every byte below `count` holds a raw value that `append` stored.
        KnownWord(rawValue: UInt8(truncatingIfNeeded: self.shape &>> UInt32(position &* 8))).unsafelyUnwrapped
    }

    /// The keys as an array, and whether they are distinct. The usual shapes of request params and results come
    /// from array literals, which are statically allocated and shared: no allocation at all.
    func array() -> (keys: [String], areDistinct: Bool) {
        // Raw values are never 0, so the shape alone also says how many keys there are.
        switch self.shape {
        case Self.shape(.path): return (["path"], true)
        case Self.shape(.path, .value): return (["path", "value"], true)
        case Self.shape(.path, .options): return (["path", "options"], true)
        case Self.shape(.path, .values): return (["path", "values"], true)
        case Self.shape(.path, .index, .value): return (["path", "index", "value"], true)
        case Self.shape(.path, .indexes, .values): return (["path", "indexes", "values"], true)
        case Self.shape(.subscription): return (["subscription"], true)
        case Self.shape(.ops): return (["ops"], true)
        case Self.shape(.method, .params): return (["method", "params"], true)
        case Self.shape(.seq): return (["seq"], true)
        case Self.shape(.value, .seq): return (["value", "seq"], true)
        case Self.shape(.subscription, .seq): return (["subscription", "seq"], true)
        case Self.shape(.code, .message): return (["code", "message"], true)
        default:
            var keys: [String] = []
            keys.reserveCapacity(self.count)
            var areDistinct = true
            for position in 0..<self.count {
                let word = self.word(at: position)
                for earlier in 0..<position where self.word(at: earlier) == word { areDistinct = false }
                keys.append(word.text)
            }
            return (keys, areDistinct)
        }
    }

    /// The shape of the keys `first`, `second`, `third`, for the table in `array()`; folds to a constant.
    @inline(__always)
    private static func shape(_ first: KnownWord, _ second: KnownWord? = nil, _ third: KnownWord? = nil) -> UInt32 {
        UInt32(first.rawValue) | UInt32(second?.rawValue ?? 0) &<< 8 | UInt32(third?.rawValue ?? 0) &<< 16
    }
}

/// The fingerprints of up to eight plain ASCII keys of an object. Two such keys are equal exactly when their
/// UTF-8 is, so different fingerprints prove them different; equal ones (or a ninth key) leave it to the exact check.
struct FingerprintSet {
    private var fingerprints: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
        0, 0, 0, 0, 0, 0, 0, 0
    )
    private var count = 0

    /// Adds the fingerprint of the plain ASCII key of `count` bytes at `text` (`available` bytes are readable
    /// there); returns false when the key may be there already (an equal fingerprint, or no room left), true when it
    /// is certainly new.
    @inline(__always)
    mutating func insert(_ text: UnsafePointer<UInt8>, count: Int, available: Int) -> Bool {
        // The first eight bytes (zero-padded; ASCII text has no NUL) and the length.
        let word = JSONParser.word(text, count: min(count, 8), available: available)
        return self.insert(word ^ UInt64(truncatingIfNeeded: count) &<< 56)
    }

    /// `insert(_:count:available:)` for a key that is a String (plain ASCII).
    mutating func insert(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { utf8 in
            // Known words are never empty.
            self.insert(utf8.baseAddress.unsafelyUnwrapped, count: utf8.count, available: utf8.count)
        }
    }

    private mutating func insert(_ fingerprint: UInt64) -> Bool {
        guard self.count < 8 else { return false }
        let count = self.count
        let isNew = withUnsafeMutableBytes(of: &self.fingerprints) { raw in
            let stored = raw.bindMemory(to: UInt64.self)
            for index in 0..<count where stored[index] == fingerprint { return false }
            stored[count] = fingerprint
            return true
        }
        if isNew { self.count &+= 1 }
        return isNew
    }
}
