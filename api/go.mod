module github.com/coworkjobs/coworkjobs/api

go 1.26.0
