// EXPECT: 2:3: error: unterminated string literal
"""abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij
"""
