/// One server-sent event in the `text/event-stream` format (WHATWG HTML §9.2).
///
/// ```swift
/// ServerSentEvent(id: 42, event: "note.created", data: #"{"id":"1"}"#).encoded
/// // "id: 42\nevent: note.created\ndata: {\"id\":\"1\"}\n\n"
/// ```
public struct ServerSentEvent: Sendable, Hashable {
    public var id: Int64?
    public var event: String?
    public var data: String

    public init(id: Int64? = nil, event: String? = nil, data: String) {
        self.id = id
        self.event = event
        self.data = data
    }

    /// The event on the wire; multi-line data becomes several `data:` lines.
    public var encoded: [UInt8] {
        var text = ""
        if let id { text += "id: \(id)\n" }
        if let event { text += "event: \(event)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) {
            text += "data: \(line)\n"
        }
        text += "\n"
        return Array(text.utf8)
    }

    /// A comment line, which clients ignore: keeps proxies from closing an idle stream.
    public static let heartbeat: [UInt8] = Array(":\n\n".utf8)
}
