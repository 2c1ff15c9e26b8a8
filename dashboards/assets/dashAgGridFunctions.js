// Formatters the kernel grid's column definitions name ({"function": "pafInt(params.value)"}).
// dash-ag-grid looks functions up in window.dashAgGridFunctions; nothing here is fetched remotely.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

// Integers with thousands separators; values the server sent as text (beyond 2^53) shown as sent.
dagfuncs.pafInt = function (v) {
  if (v === null || v === undefined) { return ""; }
  return typeof v === "number" ? v.toLocaleString("en-US") : String(v);
};

// Identifiers: exact digits, no separators.
dagfuncs.pafId = function (v) {
  return v === null || v === undefined ? "" : String(v);
};

// Measurements: six significant digits, separators, exponent only for very large or small values.
dagfuncs.pafFloat = function (v) {
  if (v === null || v === undefined) { return ""; }
  if (typeof v !== "number") { return String(v); }
  var a = Math.abs(v);
  if (a !== 0 && (a >= 1e15 || a < 1e-4)) { return v.toExponential(4); }
  return v.toLocaleString("en-US", { maximumSignificantDigits: 6 });
};
