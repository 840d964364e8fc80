/// The wire types the SDK's methods take and return — `Note`, `NoteList`, `Upload`,
/// `UploadPage`, `NoteEvent`, `EchoResponse`, `Timestamp`… — come with `import JotterClient`:
/// no second import is needed.
@_exported import JotterAPI
