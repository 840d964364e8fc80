import JotterAPI
import JotterHTTP

/// The conditional headers of a note write: `If-Match` and `If-None-Match` (RFC 9110 §13.1.1,
/// §13.1.2), checked against the note as stored, after the `404` of a missing note.
enum NotePreconditions {
    /// The version the write must still find when it commits (nil: any).
    ///
    /// - Throws: `400` when either header is not `*` or a list of quoted entity tags (`3` for
    ///   `"3"`); `412` when `If-Match` names another version, or `If-None-Match` is `*` or names
    ///   this one.
    static func check(_ request: Request, current: Note) throws(HTTPError) -> Int64? {
        var version: Int64?
        // An empty field value is an empty list (RFC 9110 §5.6.1): no condition, as if absent.
        if let header = request.headers["If-Match"], !header.trimmingASCIISpaces().isEmpty {
            let condition = try parse(header, field: "If-Match")
            guard condition.matches(current.etag, weak: false) else { throw stale(current) }
            if condition != .any { version = Int64(current.version) }
        }
        if let header = request.headers["If-None-Match"], !header.trimmingASCIISpaces().isEmpty {
            let condition = try parse(header, field: "If-None-Match")
            guard !condition.matches(current.etag, weak: true) else {
                throw HTTPError(
                    .preconditionFailed,
                    detail:
                        "note \(current.id) exists at version \(current.version) (ETag \(current.etag)), and If-None-Match: \(header.trimmingASCIISpaces()) excludes it",
                    headers: HTTPHeaders([("ETag", current.etag)]))
            }
            // It held for the version read: the write must find that version still.
            version = Int64(current.version)
        }
        return version
    }

    /// Whether the request has a conditional header `check` reads (an empty one is none).
    static func given(_ request: Request) -> Bool {
        ["If-Match", "If-None-Match"].contains { request.headers[$0].map { !$0.trimmingASCIISpaces().isEmpty } ?? false }
    }

    /// `412` for a write over another version than `current`.
    static func stale(_ current: Note) -> HTTPError {
        HTTPError(
            .preconditionFailed, detail: "note \(current.id) has changed: its version is now \(current.version) (ETag \(current.etag))",
            headers: HTTPHeaders([("ETag", current.etag)]))
    }

    /// `*`, or comma-separated entity tags each `"…"` or `W/"…"`; anything else is `400`.
    static func parse(_ header: String, field: String) throws(HTTPError) -> EntityTagCondition {
        let trimmed = header.trimmingASCIISpaces()
        if trimmed == "*" { return .any }
        let members = trimmed.split(separator: ",").map { $0.trimmingASCIISpaces() }.filter { !$0.isEmpty }
        let wellFormed =
            !members.isEmpty
            && members.allSatisfy { member in
                let tag = member.hasPrefix("W/") ? member.dropFirst(2) : member[...]
                return tag.count >= 2 && tag.first == "\"" && tag.last == "\"" && !tag.dropFirst().dropLast().contains("\"")
            }
        guard wellFormed else {
            throw HTTPError.badRequest(
                #"\#(field) must be * or entity tags in double quotes, such as "3" (the note's ETag); got \#(trimmed.isEmpty ? "nothing" : String(trimmed))"#
            )
        }
        return EntityTagCondition(header)
    }
}
