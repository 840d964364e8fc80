// The wire module's types (JSONValue, ProblemDetails, JSONSchema) are part of the framework's API.
@_exported import JotterWire
