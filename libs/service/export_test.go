package service

// SeedCommandFor is seedCommand, for the tests of a seeder's command line.
var SeedCommandFor = seedCommand
