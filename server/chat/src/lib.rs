//! `tandem chat`: the terminal front end (in progress).
