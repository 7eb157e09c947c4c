package argtext

// FlatCanonical exposes flatCanonical to the tests of package argtext_test.
var FlatCanonical = flatCanonical
