"""The base layer every replaykit package builds on: JSON decoding and canonical encoding
(``json``), the native core's face (``native``), file modes (``files``), notebook displays
(``display``), sequence alignment (``align``), each format's envelope (``envelope``) and the
delegation of core methods to the layers above (``delegates``).
"""
