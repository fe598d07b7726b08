module github.com/coworkjobs/coworkjobs/services/content

go 1.26.0

require github.com/coworkjobs/coworkjobs/libs v0.0.0

replace github.com/coworkjobs/coworkjobs/libs => ../../libs
