"""What replaces PyFlink's Java test harness: its test bases (``test_case_utils``), its
collecting sink (``test_util``), the JVM gateway and Java configuration (``jvm``), and the
Table API names a test module imports (``table``)."""
