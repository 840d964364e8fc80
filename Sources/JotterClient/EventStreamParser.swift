/// Reads `text/event-stream` bytes as they arrive and returns each complete event, by the
/// WHATWG rules: lines end in LF, CRLF or CR (also split across chunks); `field: value` with one
/// optional space; `data` lines joined by newlines; `:` comments skipped; an event is
/// dispatched at an empty line and only when it has data.
///
/// ```swift
/// var parser = EventStreamParser()
/// parser.feed(Array("id: 7\nevent: note.created\ndata: {}\n\n".utf8))
/// // [Event(id: "7", type: "note.created", data: "{}")]
/// ```
struct EventStreamParser: Sendable {
    struct Event: Sendable, Hashable {
        /// The last event id seen on the stream (it carries over to events without `id:`).
        var id: String?
        /// `event:`, or `message` when absent.
        var type: String
        var data: String
    }

    /// The reconnection delay the server asked for with `retry:`, in milliseconds.
    private(set) var retry: Int?
    /// The last `id:` read, dispatched with an event or not.
    private(set) var lastEventID: String?
    private var line: [UInt8] = []
    private var afterCR = false
    private var type = ""
    private var data: [String] = []
    private var startOfStream = true

    /// Consumes `bytes`; returns the events they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }  // CRLF: the CR ended the line already
            }
            switch byte {
            case 0x0A, 0x0D:
                afterCR = byte == 0x0D
                if let event = endLine() { events.append(event) }
            default:
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> Event? {
        defer { line.removeAll(keepingCapacity: true) }
        if startOfStream {
            startOfStream = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }  // a UTF-8 BOM
        }
        guard !line.isEmpty else { return dispatch() }
        guard line[0] != UInt8(ascii: ":") else { return nil }  // a comment (the heartbeat)
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.endIndex ? colon + 1 : colon
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch field {
        case "event": type = value
        case "data": data.append(value)
        case "id" where !value.contains("\u{0}"): lastEventID = value
        case "retry": if !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { retry = Int(value) }
        default: break
        }
        return nil
    }

    private mutating func dispatch() -> Event? {
        defer {
            type = ""
            data = []
        }
        guard !data.isEmpty else { return nil }
        return Event(id: lastEventID, type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"))
    }
}
