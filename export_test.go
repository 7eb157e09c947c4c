package deskbot

// FlatCanonical exposes flatCanonical to the tests of package deskbot_test.
var FlatCanonical = flatCanonical
