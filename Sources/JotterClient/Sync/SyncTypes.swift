import Foundation
import JotterAPI

/// A note of the sync engine's replica: what the app shows and edits, with or without a network.
public struct LocalNote: Sendable, Hashable, Identifiable {
    /// The server's id; `local-…` for a note created here whose creation the server has not
    /// answered yet (it then takes the server's id: `NotesSyncEngine.Update.idAssigned`).
    public var id: String
    /// The text as the user last left it (local edits included).
    public var body: String
    /// The server version this text was made from; 0 for a note the server has not seen yet.
    public var version: Int
    /// When the note was created.
    public var createdAt: Date
    /// When it last changed, here or on the server.
    public var updatedAt: Date
    /// Whether it has local edits the server has not confirmed yet.
    public var hasPendingEdits: Bool

    /// Whether the server has not assigned this note its id yet.
    public var isLocalOnly: Bool { id.hasPrefix(NotesSyncEngine.localIDPrefix) }
}

/// A write the server merged into a newer version: where both sides' text was kept
/// (`report.regions`, UTF-16 offsets into the note's body) for the app to highlight.
public struct SyncMerge: Sendable, Hashable {
    /// The merged note.
    public var noteID: String
    /// The version the merge made.
    public var version: Int
    /// How the server merged: base, `clean` or `overlap`, the regions.
    public var report: MergeReport
    /// When the answer came.
    public var date: Date

    /// Whether both sides changed the same text (both kept, in `report.regions`).
    public var isOverlap: Bool { report.result == "overlap" }
}

/// An edit the server could not merge into its note: the user's text was kept as a note of its
/// own (`copyID`), never dropped, and the original note took the server's state.
public struct SyncConflict: Sendable, Hashable, Identifiable {
    /// Why the edit could not be merged.
    public enum Reason: String, Sendable, Hashable {
        /// The version the edit was made from is no longer kept on the server (`/problems/unknown-base`).
        case unknownBase = "unknown-base"
        /// The merge was past the server's bounds (`/problems/merge-too-large`).
        case mergeTooLarge = "merge-too-large"
        /// The note was moved to the trash meanwhile (`/problems/note-deleted`).
        case noteDeleted = "note-deleted"
        /// The note no longer exists on the server (`404`).
        case noteGone = "note-gone"
        /// A deletion made here of a note changed elsewhere since the version deleted (`412`
        /// to the delete's `If-Match`): the note was not deleted; it stays with the other
        /// edit, back in the replica (`copyID` is the note itself: nothing was copied).
        case editedElsewhere = "edited-elsewhere"
    }

    /// Identifies this record (for `NotesSyncEngine.dismissConflict`).
    public var id: Int64
    /// The note the edit was made to.
    public var noteID: String
    /// The note that now holds the user's text (a local id until the server answers its
    /// creation); for `.editedElsewhere`, the note itself.
    public var copyID: String
    /// Why.
    public var reason: Reason
    /// When it happened.
    public var date: Date
}

/// What the app shows of the sync: never the retries, only where things stand.
public struct SyncState: Sendable, Hashable {
    /// Local edits (creations, edits, deletions) not yet confirmed by the server.
    public var pending: Int
    /// When a sync last completed (push and pull), `nil` before the first.
    public var lastSync: Date?
    /// Whether a sync is running.
    public var isSyncing: Bool
    /// Merges the server made of this replica's edits, newest first, until dismissed.
    public var merges: [SyncMerge]
    /// Edits kept as notes of their own, newest first, until dismissed.
    public var conflicts: [SyncConflict]
    /// Why the last sync stopped when a person must act: signed out (`401`/`403`), over the
    /// quota (`507`), the replica of another user (`JotterClientError.isReplicaOfAnotherUser`);
    /// or what it could not send: a note too large (`413`), a write refused (`422`) — such an
    /// edit waits (`PendingEdit.refusedStatus`) until edited or deleted, the others going on.
    /// Cleared by a sync that completes with nothing refused.
    public var needsAttention: JotterClientError?
    /// Why the last sync stopped when trying again later is enough: offline, the server away
    /// after the retries. Cleared by a sync that completes.
    public var lastError: JotterClientError?

    /// Whether the last sync could not reach the server.
    public var isOffline: Bool { lastError?.isTransport ?? false }

    /// Equal when every field is (errors compared by their message).
    public static func == (left: SyncState, right: SyncState) -> Bool {
        left.pending == right.pending && left.lastSync == right.lastSync && left.isSyncing == right.isSyncing
            && left.merges == right.merges && left.conflicts == right.conflicts
            && left.needsAttention?.message == right.needsAttention?.message && left.lastError?.message == right.lastError?.message
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(pending)
        hasher.combine(lastSync)
        hasher.combine(isSyncing)
        hasher.combine(merges)
        hasher.combine(conflicts)
        hasher.combine(needsAttention?.message)
        hasher.combine(lastError?.message)
    }
}

/// An edit waiting in the outbox, as it will be sent.
public struct PendingEdit: Sendable, Hashable {
    /// What the edit does.
    public enum Kind: String, Sendable, Hashable {
        /// `POST /notes`.
        case create
        /// `PUT /notes/{id}` with `Base-Version`.
        case update
        /// `DELETE /notes/{id}` (to the trash).
        case delete
    }

    /// Its place in the outbox (sent in this order).
    public var sequence: Int64
    /// The note (a local id until its creation is answered).
    public var noteID: String
    /// What it does.
    public var kind: Kind
    /// The text sent (`create` and `update`).
    public var body: String?
    /// The version the text was made from (`update`); `nil` until the note's creation is answered.
    public var baseVersion: Int?
    /// Generated once and kept: a resend after a lost answer carries the same key.
    public var idempotencyKey: String
    /// How many times it was sent (or about to be) without an answer recorded: more than 0
    /// means the server may have it already. An attempt that never reached the server (no
    /// connection made) does not count: later edits of the note still fold into it.
    public var attempts: Int
    /// The status with which the server refused it for good, storing nothing (`413` too large,
    /// `422` invalid): it waits, with the edits of its note behind it, until `edit` changes
    /// its text (sent again) or `delete` drops it; `nil` otherwise.
    public var refusedStatus: Int?
}
