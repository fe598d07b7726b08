module github.com/coworkjobs/coworkjobs/services/gateway

go 1.26.0

require github.com/coworkjobs/coworkjobs/libs v0.0.0

replace github.com/coworkjobs/coworkjobs/libs => ../../libs
