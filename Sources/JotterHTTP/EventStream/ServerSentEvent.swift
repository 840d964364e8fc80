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
        // One line (every note event: JSON has no raw line breaks): the bytes straight out,
        // without splitting into Characters. Data with a CR or LF takes the general path.
        if !data.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(data.utf8.count + (event?.utf8.count ?? 0) + 40)
            if let id {
                bytes.append(contentsOf: "id: ".utf8)
                bytes.append(contentsOf: String(id).utf8)
                bytes.append(0x0A)
            }
            if let event {
                bytes.append(contentsOf: "event: ".utf8)
                bytes.append(contentsOf: event.utf8)
                bytes.append(0x0A)
            }
            bytes.append(contentsOf: "data: ".utf8)
            bytes.append(contentsOf: data.utf8)
            bytes.append(contentsOf: [0x0A, 0x0A])
            return bytes
        }
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
