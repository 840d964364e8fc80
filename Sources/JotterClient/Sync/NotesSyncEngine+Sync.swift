import Foundation
import JotterAPI

/// The push of the outbox and the pull of the change feed.
extension NotesSyncEngine {
    // MARK: Push

    /// Sends the outbox in order until it is empty or a request fails (thrown, the failed edit
    /// and those after it kept). Each request is retried by the client's policy on transient
    /// failures first; each edit is marked as attempted in the file before it is sent, so that
    /// after a kill its resend knows the server may have it already — unless no connection was
    /// made (then the server certainly has nothing, and a later edit may still fold into it).
    /// An edit the server refuses for good (`refusedForGood`) is set aside with the edits of its
    /// note behind it, and the others go on.
    func push() async throws(JotterClientError) {
        while let edit = try db.rows(
            """
            SELECT \(Self.outboxColumns) FROM outbox AS waiting WHERE refused_status IS NULL AND NOT EXISTS(
                SELECT 1 FROM outbox AS refused WHERE refused.note_id = waiting.note_id AND refused.refused_status IS NOT NULL
                AND refused.seq < waiting.seq)
            ORDER BY seq LIMIT 1
            """
        ).first.map(Self.pendingEdit) {
            try db.rows("UPDATE outbox SET attempts = attempts + 1 WHERE seq = ?", [.integer(edit.sequence)])
            do throws(JotterClientError) {
                switch edit.kind {
                case .create: try await pushCreate(edit)
                case .update: try await pushUpdate(edit)
                case .delete: try await pushDelete(edit)
                }
            } catch  where error.neverReachedServer {
                try db.rows("UPDATE outbox SET attempts = attempts - 1 WHERE seq = ? AND attempts > 0", [.integer(edit.sequence)])
                throw error
            } catch  where Self.refusedForGood(error) {
                try refuse(edit, error)
            }
            progressed()
        }
    }

    /// An answer after which the server will never take this edit as it is, having stored
    /// nothing: too large (`413`), malformed (`400`), invalid (`422`).
    static func refusedForGood(_ error: JotterClientError) -> Bool {
        [400, 413, 422].contains(error.status ?? 0)
    }

    /// Sets aside an edit the server refused for good. It was never applied: it becomes
    /// unsent again (attempts 0, a new key), so `edit()` changes it and `delete()` drops it,
    /// and takes the text of the note's later updates (made from it, none sent); a later
    /// deletion makes it moot (a creation refused and deleted leaves nothing).
    private func refuse(_ edit: PendingEdit, _ error: JotterClientError) throws(JotterClientError) {
        try transaction { () throws(JotterClientError) in
            let later = try db.rows(
                "SELECT seq, kind, body FROM outbox WHERE note_id = ? AND seq > ? ORDER BY seq", [.text(edit.noteID), .integer(edit.sequence)])
            if later.contains(where: { $0[1].text == "delete" }), edit.kind != .delete {
                if edit.kind == .create {
                    try db.rows("DELETE FROM outbox WHERE note_id = ?", [.text(edit.noteID)])
                    try db.rows("DELETE FROM notes WHERE id = ?", [.text(edit.noteID)])
                } else {
                    try db.rows(
                        "DELETE FROM outbox WHERE note_id = ? AND kind = 'update' AND seq >= ?", [.text(edit.noteID), .integer(edit.sequence)])
                }
                return
            }
            let body = later.last(where: { $0[1].text == "update" })?[2].text ?? edit.body
            try db.rows("DELETE FROM outbox WHERE note_id = ? AND seq > ?", [.text(edit.noteID), .integer(edit.sequence)])
            // The server's problem, kept for `state.needsAttention`; a 413's detail also gives the size.
            var problem =
                error.problem
                ?? ProblemDetails(title: error.title ?? "Refused", status: error.status ?? 0, detail: error.message)
            if error.isTooLarge, let sent = edit.body {
                problem.detail = (problem.detail.map { $0 + "; " } ?? "") + "this note's text is \(sent.utf8.count) bytes"
            }
            let problemJSON = (try? JSONEncoder().encode(problem)).map { String(decoding: $0, as: UTF8.self) }
            try db.rows(
                """
                UPDATE outbox SET body = ?, attempts = 0, idempotency_key = ?, refused_status = ?, refused_message = ?,
                    refused_problem = ? WHERE seq = ?
                """,
                [
                    body.map(SQLValue.text) ?? .null, .text(UUID().uuidString), .integer(Int64(error.status ?? 0)), .text(error.message),
                    problemJSON.map(SQLValue.text) ?? .null, .integer(edit.sequence),
                ])
        }
        try changed([edit.noteID])
    }

    /// `POST /notes` with the edit's own key: a resend of one whose answer was lost gets that
    /// answer again. The local id becomes the server's, in the replica and in the outbox.
    private func pushCreate(_ edit: PendingEdit) async throws(JotterClientError) {
        let note = try await client.notes.create(edit.body ?? "", idempotencyKey: edit.idempotencyKey)
        let local = edit.noteID
        try transaction { () throws(JotterClientError) in
            try db.rows("DELETE FROM outbox WHERE seq = ?", [.integer(edit.sequence)])
            let later = try db.scalar("SELECT count(*) FROM outbox WHERE note_id = ?", [.text(local)])?.integer ?? 0
            try db.rows("DELETE FROM notes WHERE id = ?", [.text(note.id)])
            if later == 0 {
                try db.rows(
                    "UPDATE notes SET id = ?, body = ?, version = ?, created_at = ?, updated_at = ? WHERE id = ?",
                    [
                        .text(note.id), .text(note.body), .integer(Int64(note.version)), .real(note.createdAt.timeIntervalSince1970),
                        .real(note.updatedAt.timeIntervalSince1970), .text(local),
                    ])
            } else {
                try db.rows(
                    "UPDATE notes SET id = ?, version = ?, created_at = ? WHERE id = ?",
                    [.text(note.id), .integer(Int64(note.version)), .real(note.createdAt.timeIntervalSince1970), .text(local)])
            }
            // Edits queued on the new note were made from the text just created: its version is their base.
            try db.rows("UPDATE outbox SET note_id = ? WHERE note_id = ?", [.text(note.id), .text(local)])
            try db.rows(
                "UPDATE outbox SET base_version = ? WHERE note_id = ? AND kind IN ('update', 'delete') AND base_version IS NULL",
                [.integer(Int64(note.version)), .text(note.id)])
            try db.rows("UPDATE conflicts SET copy_id = ? WHERE copy_id = ?", [.text(note.id), .text(local)])
        }
        assigned(local: local, server: note.id)
        try changed([local, note.id])
    }

    /// `PUT` with `Base-Version`: the server merges the edit with what was committed since.
    private func pushUpdate(_ edit: PendingEdit) async throws(JotterClientError) {
        guard let base = edit.baseVersion else {
            throw .localFile("the queued edit \(edit.sequence) of note \(edit.noteID) has no base version")
        }
        if edit.attempts > 0 {
            // Sent before without an answer recorded: if it was committed as sent, it is done.
            // (Else the resend is merged from the same base: text already there is not added twice.)
            if let current = try? await client.notes.get(edit.noteID), current.body == edit.body {
                return try applied(edit, NoteEnvelope(note: current))
            }
        }
        let answer: NoteEnvelope
        do throws(JotterClientError) {
            answer = try await client.notes.update(
                edit.noteID, body: edit.body ?? "", baseVersion: base,
                idempotencyKey: edit.idempotencyKey.isEmpty ? nil : edit.idempotencyKey)
        } catch {
            guard let reason = Self.unmergeable(error) else { throw error }
            return try await keepAsCopy(edit, reason: reason)
        }
        try applied(edit, answer)
    }

    /// The server's answer to an update: the replica takes the note unless more edits of it
    /// wait (their text is newer); a merge is recorded for the app.
    ///
    /// The edits queued after it were made from the text sent. Committed as sent, they descend
    /// from the answer's version: that is their base. Merged with someone else's, each is moved
    /// onto the merged text as the web app does (`TextRebase`) and sent from the answer's
    /// version, so the server does not merge the text sent in a second time; where both changed
    /// the same place, it keeps its base and the server merges it the same way (nothing lost).
    private func applied(_ edit: PendingEdit, _ answer: NoteEnvelope) throws(JotterClientError) {
        let note = answer.note
        try transaction { () throws(JotterClientError) in
            try db.rows("DELETE FROM outbox WHERE seq = ?", [.integer(edit.sequence)])
            let later = try db.scalar("SELECT count(*) FROM outbox WHERE note_id = ?", [.text(note.id)])?.integer ?? 0
            let asSent = note.body == edit.body
            if asSent {
                try db.rows(
                    "UPDATE outbox SET base_version = ? WHERE note_id = ? AND kind IN ('update', 'delete')",
                    [.integer(Int64(note.version)), .text(note.id)])
            } else if later > 0, let sent = edit.body {
                try rebaseLater(of: note, sent: sent)
            }
            if later == 0 {
                try store(note)
            } else if asSent {
                try db.rows("UPDATE notes SET version = ? WHERE id = ?", [.integer(Int64(note.version)), .text(note.id)])
            }
            if let merge = answer.merge {
                let regions = String(decoding: (try? JSONEncoder().encode(merge.regions)) ?? Data("[]".utf8), as: UTF8.self)
                try db.rows(
                    "INSERT OR REPLACE INTO merges(note_id, version, base, result, regions, at) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        .text(note.id), .integer(Int64(note.version)), .integer(Int64(merge.base)), .text(merge.result),
                        .text(regions), .real(Date().timeIntervalSince1970),
                    ])
            }
        }
        try changed([note.id])
    }

    /// The queued updates of `merged`'s note, made from `sent`, moved onto its merged text and
    /// version, in order, as long as each rebases (the rest keep their base); the replica's
    /// text follows the last one moved.
    private func rebaseLater(of merged: Note, sent: String) throws(JotterClientError) {
        var sent = sent, onto = merged.body
        var moved: String?
        for row in try db.rows("SELECT seq, body FROM outbox WHERE note_id = ? AND kind = 'update' ORDER BY seq", [.text(merged.id)]) {
            let now = row[1].text ?? ""
            guard let rebased = TextRebase.rebase(sent: sent, now: now, merged: onto) else { break }
            try db.rows("UPDATE outbox SET body = ?, base_version = ? WHERE seq = ?", [.text(rebased), .integer(Int64(merged.version)), row[0]])
            (sent, onto, moved) = (now, rebased, rebased)
        }
        guard let moved else { return }
        // The replica shows the latest text: the last update's, now with the other edit in it.
        let last = try db.scalar("SELECT body FROM outbox WHERE note_id = ? AND kind = 'update' ORDER BY seq DESC LIMIT 1", [.text(merged.id)])?.text
        if last == moved {
            try db.rows("UPDATE notes SET body = ?, version = ? WHERE id = ?", [.text(moved), .integer(Int64(merged.version)), .text(merged.id)])
        }
    }

    /// The `409`s and `404` after which the server will never take this edit of this note.
    static func unmergeable(_ error: JotterClientError) -> SyncConflict.Reason? {
        if error.status == 404 { return .noteGone }
        guard error.isMergeConflict, let type = error.problem?.type else { return nil }
        if type.hasSuffix("/problems/unknown-base") { return .unknownBase }
        if type.hasSuffix("/problems/merge-too-large") { return .mergeTooLarge }
        if type.hasSuffix("/problems/note-deleted") { return .noteDeleted }
        return nil
    }

    /// An edit the server can't merge: the user's text becomes a new note (the edit turns into
    /// its creation, with a new key, in the same transaction that records the conflict), and
    /// the original note takes the server's current state (or leaves the replica if it has none).
    private func keepAsCopy(_ edit: PendingEdit, reason: SyncConflict.Reason) async throws(JotterClientError) {
        var current: Note?
        if reason == .unknownBase || reason == .mergeTooLarge {
            do throws(JotterClientError) {
                current = try await client.notes.get(edit.noteID)
            } catch  where error.isNotFound {
                current = nil
            }
        }
        let copy = Self.localIDPrefix + UUID().uuidString.lowercased()
        let now = Date().timeIntervalSince1970
        try transaction { () throws(JotterClientError) in
            // The user's latest text: this edit's, or a later one's (those follow to the copy).
            let latest = try db.scalar("SELECT body FROM notes WHERE id = ?", [.text(edit.noteID)])?.text ?? edit.body ?? ""
            try db.rows(
                "INSERT INTO notes(id, body, version, created_at, updated_at) VALUES (?, ?, 0, ?, ?)",
                [.text(copy), .text(latest), .real(now), .real(now)])
            try db.rows(
                "UPDATE outbox SET note_id = ?, kind = 'create', base_version = NULL, idempotency_key = ?, attempts = 0 WHERE seq = ?",
                [.text(copy), .text(UUID().uuidString), .integer(edit.sequence)])
            // Later edits of the note were made from the user's text: they follow it.
            try db.rows(
                "UPDATE outbox SET note_id = ?, base_version = NULL WHERE note_id = ? AND kind = 'update' AND seq > ?",
                [.text(copy), .text(edit.noteID), .integer(edit.sequence)])
            try db.rows(
                "INSERT INTO conflicts(note_id, copy_id, reason, at) VALUES (?, ?, ?, ?)",
                [.text(edit.noteID), .text(copy), .text(reason.rawValue), .real(now)])
            let waiting = try db.scalar("SELECT count(*) FROM outbox WHERE note_id = ?", [.text(edit.noteID)])?.integer ?? 0
            if let current {
                if waiting == 0 { try store(current) }
            } else if waiting == 0 {
                try db.rows("DELETE FROM notes WHERE id = ?", [.text(edit.noteID)])
            }
        }
        try changed([edit.noteID, copy])
    }

    /// `DELETE` (to the server's trash) with `If-Match` naming the version deleted; a note
    /// already gone is deleted all the same. One changed elsewhere since (`412`) is not: the
    /// deletion leaves the outbox, the note comes back with the server's text, a conflict
    /// (`.editedElsewhere`) says so.
    private func pushDelete(_ edit: PendingEdit) async throws(JotterClientError) {
        do throws(JotterClientError) {
            _ = try await client.notes.delete(edit.noteID, ifMatch: edit.baseVersion.map { "\"\($0)\"" })
        } catch  where error.isNotFound {
        } catch  where error.isConflict {
            return try await keptEdited(edit)
        }
        try transaction { () throws(JotterClientError) in
            try db.rows("DELETE FROM outbox WHERE seq = ?", [.integer(edit.sequence)])
            if try db.scalar("SELECT 1 FROM outbox WHERE note_id = ?", [.text(edit.noteID)]) == nil {
                try db.rows("DELETE FROM notes WHERE id = ?", [.text(edit.noteID)])
                try db.rows("DELETE FROM merges WHERE note_id = ?", [.text(edit.noteID)])
            }
        }
        try changed([edit.noteID])
    }

    /// A deletion the server refused (`412`): the note changed since the version deleted.
    private func keptEdited(_ edit: PendingEdit) async throws(JotterClientError) {
        let current: Note?
        do throws(JotterClientError) {
            current = try await client.notes.get(edit.noteID)
        } catch  where error.isNotFound {
            current = nil  // deleted meanwhile after all
        }
        try transaction { () throws(JotterClientError) in
            try db.rows("DELETE FROM outbox WHERE seq = ?", [.integer(edit.sequence)])
            guard try db.scalar("SELECT 1 FROM outbox WHERE note_id = ?", [.text(edit.noteID)]) == nil else { return }
            if let current {
                try store(current)
                try db.rows(
                    "INSERT INTO conflicts(note_id, copy_id, reason, at) VALUES (?, ?, ?, ?)",
                    [
                        .text(edit.noteID), .text(edit.noteID), .text(SyncConflict.Reason.editedElsewhere.rawValue),
                        .real(Date().timeIntervalSince1970),
                    ])
            } else {
                try db.rows("DELETE FROM notes WHERE id = ?", [.text(edit.noteID)])
                try db.rows("DELETE FROM merges WHERE note_id = ?", [.text(edit.noteID)])
            }
        }
        try changed([edit.noteID])
    }

    /// The server's state of a note into the replica (shown again if it was deleted here) —
    /// unless the replica holds a newer version of it already: an answer overtaken by a pull
    /// (another engine on the file, in this process or another) never puts an older text back.
    /// The pull's notes (`fromFeed`) always go in: the feed is the server's current state (a
    /// restored backup may have put a note's version back).
    func store(_ note: Note, fromFeed: Bool = false) throws(JotterClientError) {
        try db.rows(
            """
            INSERT INTO notes(id, body, version, created_at, updated_at, deleted) VALUES (?, ?, ?, ?, ?, 0)
            ON CONFLICT(id) DO UPDATE SET body = excluded.body, version = excluded.version,
                created_at = excluded.created_at, updated_at = excluded.updated_at, deleted = 0
            \(fromFeed ? "" : "WHERE excluded.version >= notes.version")
            """,
            [
                .text(note.id), .text(note.body), .integer(Int64(note.version)),
                .real(note.createdAt.timeIntervalSince1970), .real(note.updatedAt.timeIntervalSince1970),
            ])
    }

    // MARK: Pull

    /// The stored cursor of the change feed (the event stream's id space), `nil` before the first pull.
    var cursor: Int64? {
        get throws(JotterClientError) { try db.scalar("SELECT value FROM meta WHERE key = 'cursor'")?.text.flatMap { Int64($0) } }
    }

    /// Pulls `GET /notes/changes` from the stored cursor, page by page, each page applied and its
    /// cursor stored in one transaction. A note with edits in the outbox keeps them (they are
    /// pushed with their base; the server merges). A reset walk (the cursor older than the
    /// feed keeps) lists the complete state: when it ends, notes it did not list leave the
    /// replica — except those with unsent edits — and only then is its cursor stored.
    func pull() async throws(JotterClientError) {
        var since = try cursor
        var reset = false
        var listed = Set<String>()
        while true {
            // Bytes arriving are progress: a page of 4 MiB on a slow link may take longer than
            // `syncTimeout` in all.
            let page = try await client.notes.changes(since: since, limit: pageSize) { _ in progressed() }
            reset = reset || page.reset
            var touched = Set<String>()
            try transaction { () throws(JotterClientError) in
                for change in page.changes {
                    listed.insert(change.id)
                    if try db.scalar("SELECT 1 FROM outbox WHERE note_id = ?", [.text(change.id)]) != nil { continue }
                    switch change {
                    case .note(let note):
                        try store(note, fromFeed: true)
                    case .deleted(let id, _):
                        try db.rows("DELETE FROM notes WHERE id = ?", [.text(id)])
                        try db.rows("DELETE FROM merges WHERE note_id = ?", [.text(id)])
                    }
                    touched.insert(change.id)
                }
                if !reset { try storeCursor(page.cursor) }
            }
            since = page.cursor
            progressed()
            try changed(touched)
            if !page.more { break }
        }
        guard reset, let since else { return }
        var dropped = Set<String>()
        try transaction { () throws(JotterClientError) in
            let known = try db.rows(
                """
                SELECT id FROM notes WHERE id NOT LIKE '\(Self.localIDPrefix)%'
                AND NOT EXISTS(SELECT 1 FROM outbox WHERE outbox.note_id = notes.id)
                """
            ).compactMap { $0[0].text }
            for id in known where !listed.contains(id) {
                try db.rows("DELETE FROM notes WHERE id = ?", [.text(id)])
                try db.rows("DELETE FROM merges WHERE note_id = ?", [.text(id)])
                dropped.insert(id)
            }
            try storeCursor(since)
        }
        try changed(dropped)
    }

    private func storeCursor(_ cursor: Int64) throws(JotterClientError) {
        try db.rows("INSERT OR REPLACE INTO meta(key, value) VALUES ('cursor', ?)", [.text(String(cursor))])
    }
}
